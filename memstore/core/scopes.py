"""Working memory's task state: the checks of a caller's values and the stored JSON forms."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memstore.core.validation import (
    check_aware,
    check_identifier,
    check_json,
    check_number_between,
    check_text,
)
from memstore.errors import InvalidInput
from memstore.types import TaskState

__all__ = [
    "CHECKPOINT_FORMAT",
    "check_task_state",
    "progress_changes",
    "task_state_from_json",
    "task_state_to_json",
]

# The version tag of a working-memory checkpoint's stored document.
CHECKPOINT_FORMAT = "memstore-wm-checkpoint/1"


def task_state_to_json(state: TaskState) -> dict[str, Any]:
    return {
        "task_id": state.task_id,
        "task_type": state.task_type,
        "description": state.description,
        "status": state.status,
        "current_step": state.current_step,
        "total_steps": state.total_steps,
        "progress_percent": state.progress_percent,
        "context": state.context,
        "started_at": state.started_at.isoformat(),
        "updated_at": state.updated_at.isoformat(),
    }


def task_state_from_json(data: dict[str, Any]) -> TaskState:
    return TaskState(
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
    check_number_between("progress_percent", state.progress_percent, 0, 100)
    if not isinstance(state.context, dict):
        raise InvalidInput("task context must be a dict")
    check_json("task context", state.context)
    check_aware("started_at", state.started_at)
    check_aware("updated_at", state.updated_at)
    return state


def progress_changes(
    current_step: object, progress_percent: object, status: object
) -> dict[str, Any]:
    """The checked fields of ``update_task_progress`` that are not None (progress clamped)."""
    changes: dict[str, Any] = {}
    if current_step is not None:
        if isinstance(current_step, bool) or not isinstance(current_step, int) or current_step < 0:
            raise InvalidInput("current_step must be a non-negative integer")
        changes["current_step"] = current_step
    if progress_percent is not None:
        if isinstance(progress_percent, bool) or not isinstance(progress_percent, int | float):
            raise InvalidInput("progress_percent must be a number")
        if progress_percent != progress_percent:  # NaN cannot be clamped meaningfully
            raise InvalidInput("progress_percent must not be NaN")
        # Clamp before float(): an int beyond float range must not raise OverflowError.
        changes["progress_percent"] = float(min(100.0, max(0.0, progress_percent)))
    if status is not None:
        check_text("status", status, allow_empty=True, max_chars=255)
        changes["status"] = status
    return changes
