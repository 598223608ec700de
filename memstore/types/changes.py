"""The change log as ``store.changes()`` yields it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

__all__ = [
    "Change",
    "ChangeKind",
]


class ChangeKind(StrEnum):
    """What a :class:`Change` of ``store.changes()`` reports."""

    BLOCK_UPDATED = "block_updated"  # update_block / append_block; key: the block name
    BLOCK_DELETED = "block_deleted"  # delete_block; key: the block name
    FACT_ASSERTED = "fact_asserted"  # a new fact row; key: its id
    FACT_SUPERSEDED = "fact_superseded"  # a fact replaced by a newer one; key: the old id
    FACT_RETRACTED = "fact_retracted"  # retract_fact; key: the fact id
    THREAD_APPENDED = "thread_appended"  # a slot appended; key: the thread id
    THREAD_DELETED = "thread_deleted"  # delete_thread or gc; key: the thread id
    # Not stored: reported to an iterator whose position belongs to a tenant that
    # was forgotten since (``forget`` leaves nothing, the log included); key: None.
    FORGET = "forget"
    # Not stored: gc's retention dropped changes after the caller's position;
    # re-read whatever state you track. key: None.
    CHANGES_PRUNED = "changes_pruned"
    # Not stored: the caller's position is past the end of the tenant's log, so
    # the log cannot have served it (the database was restored from an older
    # copy, or the position is not one this store yielded); what the caller
    # knew may not exist. Re-read whatever state you track. key: None.
    CHANGES_RESET = "changes_reset"


@dataclass(frozen=True, kw_only=True)
class Change:
    """One committed change of a tenant's memory, as ``store.changes()`` yields it.

    ``position`` is opaque: store it and pass it back as ``after=`` to resume
    (at-least-once, see docs/threads.md). ``slot_index`` is the appended slot's
    index for ``THREAD_APPENDED`` (else None).
    """

    kind: ChangeKind
    key: str | None
    at: datetime
    position: str
    user_id: str | None = None
    slot_index: int | None = None
