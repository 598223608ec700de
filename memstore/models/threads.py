from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKeyConstraint, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId
from memstore.db.types import JSONDoc

__all__ = ["SlotRow", "ThreadRow"]


class ThreadRow(Base):
    """A thread's header row: the slot counter appenders serialise on, and GC times.

    ``next_slot_index`` is only ever incremented in the same statement that
    reads it (an upsert with RETURNING), so concurrent appenders never see the
    same value.
    """

    __tablename__ = "threads"

    user_id: Mapped[TenantId]
    thread_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    next_slot_index: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    last_activity_at: Mapped[datetime]

    __table_args__ = (
        # GC scans a tenant's threads by age (idle TTL) and by creation (count limit).
        Index(None, "user_id", "last_activity_at"),
        Index(None, "user_id", "created_at"),
    )


class SlotRow(Base):
    """One immutable message of a thread. The database rejects UPDATE (trigger, 0002)."""

    __tablename__ = "slots"

    user_id: Mapped[TenantId]
    thread_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    slot_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    from_id: Mapped[str] = mapped_column(String(255))
    to_id: Mapped[str] = mapped_column(String(255))
    payload_type: Mapped[str] = mapped_column(String(255))
    payload: Mapped[Any] = mapped_column(JSONDoc)
    own_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    is_self_call: Mapped[bool] = mapped_column(Boolean)
    usage_instructions: Mapped[str] = mapped_column(Text)
    todo_nudge: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]

    __table_args__ = (
        # Deleting a thread (delete_thread, GC) takes its slots with it, including
        # one a concurrent appender committed while the delete waited for the lock.
        ForeignKeyConstraint(
            ["user_id", "thread_id"],
            ["threads.user_id", "threads.thread_id"],
            ondelete="CASCADE",
        ),
    )
