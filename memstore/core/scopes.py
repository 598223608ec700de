"""Working-memory value objects: the scope hierarchy and task state."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memstore.core.validation import check_aware, check_identifier, check_json, check_text
from memstore.errors import InvalidInput
from memstore.types import utcnow

__all__ = ["ScopeContext", "ScopeLevel", "TaskState", "check_task_state"]


class ScopeLevel(StrEnum):
    """Working-memory scopes, outermost first: project > agent instance > session."""

    PROJECT = "project"
    AGENT_INSTANCE = "agent_instance"
    SESSION = "session"


_ORDER = list(ScopeLevel)


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
        for level, scope_id in zip(_ORDER, (project_id, agent_id, session_id), strict=True):
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

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "task_type": self.task_type,
            "description": self.description,
            "status": self.status,
            "current_step": self.current_step,
            "total_steps": self.total_steps,
            "progress_percent": self.progress_percent,
            "context": self.context,
            "started_at": self.started_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskState:
        return cls(
            task_id=data["task_id"],
            task_type=data.get("task_type", ""),
            description=data.get("description", ""),
            status=data.get("status", "pending"),
            current_step=int(data.get("current_step", 0)),
            total_steps=int(data.get("total_steps", 0)),
            progress_percent=float(data.get("progress_percent", 0.0)),
            context=dict(data.get("context") or {}),
            started_at=datetime.fromisoformat(data["started_at"]),
            updated_at=datetime.fromisoformat(data["updated_at"]),
        )


def check_task_state(state: object) -> TaskState:
    """Validate a task state (as written by a caller or read from a dump)."""
    if not isinstance(state, TaskState):
        raise InvalidInput(f"expected a TaskState, got {type(state).__name__}")
    check_identifier("task_id", state.task_id)
    check_text("task_type", state.task_type, allow_empty=True, max_chars=255)
    check_text("description", state.description, allow_empty=True)
    check_text("status", state.status, allow_empty=True, max_chars=255)
    for name in ("current_step", "total_steps"):
        value = getattr(state, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"{name} must be a non-negative integer")
    progress = state.progress_percent
    if (
        isinstance(progress, bool)
        or not isinstance(progress, int | float)
        or not (0.0 <= progress <= 100.0)
    ):
        raise InvalidInput("progress_percent must be a number between 0 and 100")
    if not isinstance(state.context, dict):
        raise InvalidInput("task context must be a dict")
    check_json("task context", state.context)
    check_aware("started_at", state.started_at)
    check_aware("updated_at", state.updated_at)
    return state
