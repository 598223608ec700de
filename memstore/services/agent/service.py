"""Agent-facing layer: per-turn context, memory tools, access tracking."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstore.core.tenancy import storage_user_id
from memstore.core.validation import check_limit
from memstore.errors import InvalidInput
from memstore.repositories.access import AccessRepository
from memstore.services.access import AccessTracker
from memstore.services.agent.context import Context, ContextItem
from memstore.services.agent.memory import AgentMemory
from memstore.services.agent.tokens import TokenCounter
from memstore.services.base import Service
from memstore.services.limits import ACCESS_KINDS
from memstore.types import AccessStat

__all__ = ["AgentService"]


class AgentService(Service):
    """Agent-facing layer: per-turn context, memory tools, access tracking."""

    access_tracker: AccessTracker
    memory: AgentMemory

    async def context(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        query: str = "",
        max_tokens: int = 2_000,
        counter: TokenCounter | None = None,
        fact_limit: int | None = None,
        episode_limit: int | None = None,
        message_limit: int = 20,
        keep_recent: int = 4,
        min_score: float | None = None,
    ) -> Context:
        """Memory for one agent turn, packed by priority into ``max_tokens``.

        Priority: working blocks (pinned order), the newest ``keep_recent``
        messages of ``session_id``, the facts true now and the episodes of other
        sessions relevant to ``query`` (each kind in its ranking's order, the two
        merged by relevance), then older messages of this session. The budget
        decides how many facts and episodes come in: as many as fit, unless
        ``fact_limit`` / ``episode_limit`` caps their number (at most
        1,000 of each are recalled). Each fact and episode item's ``score`` is its
        relevance to ``query`` (0..1, as in :meth:`recall_scored`).
        """
        from memstore.services.agent.builder import build_context

        return await build_context(
            self.memory,
            user_id=user_id,
            session_id=session_id,
            query=query,
            max_tokens=max_tokens,
            counter=counter,
            fact_limit=fact_limit,
            episode_limit=episode_limit,
            message_limit=message_limit,
            keep_recent=keep_recent,
            min_score=min_score,
        )

    def tool_definitions(self, style: str = "openai") -> list[dict[str, Any]]:
        """JSON-schema definitions of the memory tools (``openai`` or ``anthropic`` style)."""
        from memstore.services.agent.tools import tool_definitions

        return tool_definitions(style)  # type: ignore[arg-type]

    async def call_tool(
        self, name: str, arguments: Any, *, user_id: str | None = None
    ) -> dict[str, Any]:
        """Run a memory tool call (arguments as a dict or the model's JSON text)."""
        from memstore.services.agent.tools import call_tool

        storage_user_id(user_id)  # a bad tenant id fails before anything else
        return await call_tool(self.memory, name, arguments, user_id=user_id)

    async def prefetch(
        self, *, user_id: str | None = None, session_id: str | None = None, limit: int = 5
    ) -> list[ContextItem]:
        """The user's hottest items: last session's ending, most-accessed facts and episodes."""
        from memstore.services.agent.prefetch import prefetch_items

        return await prefetch_items(
            self.memory, user_id=user_id, session_id=session_id, limit=limit
        )

    def record_access(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> None:
        """Count one access of each item (buffered; written in batches)."""
        if kind not in ACCESS_KINDS:
            raise InvalidInput(f"kind must be one of {sorted(ACCESS_KINDS)}")
        user = storage_user_id(user_id)
        self.access_tracker.record(user, kind, [i for i in item_ids if i], self.db.now())

    async def flush_access(self) -> None:
        """Write buffered access counts now (also happens on close and every few hundred)."""
        await self.access_tracker.flush()

    async def access_counts(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, int]:
        """Access counts of the given items, including not yet flushed ones."""
        user = storage_user_id(user_id)
        if not item_ids:
            return {}
        async with self.db.read(user) as session:
            counts = await AccessRepository(session=session).counts(user, kind, item_ids)
        for item_id, extra in self.access_tracker.pending(user, kind, item_ids).items():
            counts[item_id] = counts.get(item_id, 0) + extra
        return counts

    async def access_stats(
        self, *, user_id: str | None = None, kind: str | None = None, limit: int = 20
    ) -> list[AccessStat]:
        """The most-accessed items of a user (optionally of one kind), hottest first."""
        user = storage_user_id(user_id)
        if kind is not None and kind not in ACCESS_KINDS:
            raise InvalidInput(f"kind must be one of {sorted(ACCESS_KINDS)}")
        check_limit("limit", limit)
        await self.flush_access()
        async with self.db.read(user) as session:
            return await AccessRepository(session=session).hottest(user, kind, limit)
