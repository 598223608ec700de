"""Agent-facing layer: per-turn context, prefetch and the memory tools."""

from __future__ import annotations

from typing import Any

from memstore.core.forwarding import takes_options
from memstore.core.tenancy import storage_user_id
from memstore.services.agent.builder import ContextRequest, build_context
from memstore.services.agent.context import Context, ContextItem
from memstore.services.agent.memory import AgentMemory
from memstore.services.agent.prefetch import prefetch_items
from memstore.services.agent.tools import call_tool, tool_definitions
from memstore.services.base import Service

__all__ = ["AgentService"]


class AgentService(Service):
    """Agent-facing layer: per-turn context, prefetch and the memory tools."""

    memory: AgentMemory

    @takes_options(ContextRequest)
    async def context(self, request: ContextRequest) -> Context:
        """Memory for one agent turn, packed by priority into ``max_tokens``.

        Priority: working blocks (pinned order), the newest ``keep_recent``
        messages of ``session_id``, the facts true now and the episodes of other
        sessions relevant to ``query`` (each kind in its ranking's order, the two
        merged by relevance), then older messages of this session. The budget
        decides how many facts and episodes come in: as many as fit, unless
        ``fact_limit`` / ``episode_limit`` caps their number (at most
        1,000 of each are recalled). Each fact and episode item's ``score`` is its
        relevance to ``query`` (0..1, as in :meth:`recall_scored`).
        ``min_score`` is the relevance floor of the facts and episodes recalled
        (as in :meth:`recall`); blocks and this session's messages are not recalled.
        ``counter`` measures the budget: a :class:`TokenCounter`, or a function
        ``text -> int`` such as a model tokenizer's length; by default a
        pessimistic estimate. Items are shown by handles (``m1``, …) that
        :meth:`Context.resolve` and ``call_tool(..., context=ctx)`` map to ids.
        """
        return await build_context(self.memory, request)

    def tool_definitions(self, style: str = "openai") -> list[dict[str, Any]]:
        """JSON-schema definitions of the memory tools (``openai`` or ``anthropic`` style)."""
        return tool_definitions(style)  # type: ignore[arg-type]

    async def call_tool(
        self,
        name: str,
        arguments: Any,
        *,
        user_id: str | None = None,
        context: Context | None = None,
    ) -> dict[str, Any]:
        """Run a memory tool call (arguments as a dict or the model's JSON text).

        ``context``: the context the model was shown, so that ``load_memory``
        takes its handles (``m3``) as well as full ids.
        """
        storage_user_id(user_id)  # a bad tenant id fails before anything else
        return await call_tool(self.memory, name, arguments, user_id=user_id, context=context)

    async def prefetch(
        self, *, user_id: str | None = None, session_id: str | None = None, limit: int = 5
    ) -> list[ContextItem]:
        """The user's hottest items: last session's ending, most-accessed facts and episodes."""
        return await prefetch_items(
            self.memory, user_id=user_id, session_id=session_id, limit=limit
        )
