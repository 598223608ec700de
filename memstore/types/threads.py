"""The thread context buffer: immutable slots, thread headers and what GC removed."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

__all__ = [
    "GcReport",
    "RemovedThread",
    "Slot",
    "SlotMetadata",
    "ThreadCount",
    "ThreadInfo",
]


@dataclass(frozen=True, kw_only=True)
class SlotMetadata:
    """Everything about a slot except its payload; fixed once appended."""

    thread_id: str
    from_id: str
    to_id: str
    slot_index: int
    timestamp: datetime
    payload_type: str
    own_name: str | None = None
    is_self_call: bool = False
    usage_instructions: str = ""
    todo_nudge: str = ""
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Slot(SlotMetadata):
    """One message of a thread, as stored: its metadata's fields and its ``payload``.

    Frozen, and every read builds a fresh copy from the database, so a handler
    that mutates its ``payload`` (a plain JSON value) changes nobody else's view.
    """

    payload: Any

    @property
    def index(self) -> int:
        return self.slot_index

    @property
    def metadata(self) -> SlotMetadata:
        """Everything but the payload, as its own value."""
        return SlotMetadata(**{f.name: getattr(self, f.name) for f in fields(SlotMetadata)})


@dataclass(frozen=True, kw_only=True)
class ThreadCount:
    """A thread and how many slots it holds (or held)."""

    thread_id: str
    slot_count: int
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ThreadInfo(ThreadCount):
    """A thread's header: how many slots it holds and when it was created / last appended to."""

    created_at: datetime
    last_activity_at: datetime


@dataclass(frozen=True, kw_only=True)
class RemovedThread(ThreadCount):
    """A thread garbage collection deleted, and why (``"idle"`` or ``"max_threads"``)."""

    reason: str


@dataclass(frozen=True, kw_only=True)
class GcReport:
    """What one garbage collection removed."""

    threads: tuple[RemovedThread, ...]
    expired_keys: int
    # Change-log rows older than the store's change_retention_seconds.
    pruned_changes: int = 0

    @property
    def slots(self) -> int:
        return sum(t.slot_count for t in self.threads)
