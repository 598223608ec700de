"""Working memory: the scope hierarchy and task state."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memstore.types.defaults import utcnow

__all__ = [
    "ScopeContext",
    "ScopeLevel",
    "TaskState",
]


class ScopeLevel(StrEnum):
    """Working-memory scopes, outermost first: project > agent instance > session."""

    PROJECT = "project"
    AGENT_INSTANCE = "agent_instance"
    SESSION = "session"


@dataclass(frozen=True)
class ScopeContext:
    """One scope and its parents; keys are isolated per full path (and per tenant)."""

    scope_type: ScopeLevel
    scope_id: str
    parent: ScopeContext | None = None

    @classmethod
    def build(
        cls,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> ScopeContext | None:
        """The innermost scope of the given levels (None if no level is given)."""
        scope: ScopeContext | None = None
        for level, scope_id in zip(ScopeLevel, (project_id, agent_id, session_id), strict=True):
            if scope_id is not None:
                scope = cls(scope_type=level, scope_id=scope_id, parent=scope)
        return scope

    def path(self) -> list[ScopeContext]:
        """Outermost scope first, ending with this one."""
        chain: list[ScopeContext] = []
        node: ScopeContext | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        return chain[::-1]

    def level_id(self, level: ScopeLevel) -> str | None:
        return next((s.scope_id for s in self.path() if s.scope_type is level), None)

    def to_key_prefix(self) -> str:
        """A readable name of the path, e.g. ``project:p1/session:s1`` (display only)."""
        return "/".join(f"{s.scope_type.value}:{s.scope_id}" for s in self.path())


@dataclass(frozen=True, kw_only=True)
class TaskState:
    """What the agent is doing in this scope; ``progress_percent`` lies in 0..100."""

    task_id: str
    task_type: str = ""
    description: str = ""
    status: str = "pending"
    current_step: int = 0
    total_steps: int = 0
    progress_percent: float = 0.0
    context: dict[str, Any] = field(default_factory=dict)
    started_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
