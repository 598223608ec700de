from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId
from memstore.db.types import JSONDoc, Vector, VectorList

__all__ = ["EpisodeRow", "SessionTurnRow"]


class EpisodeRow(Base):
    """One agent turn. Tenant-first primary key so a tenant's rows sit together."""

    __tablename__ = "episodes"

    user_id: Mapped[TenantId]
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(255))
    input: Mapped[str] = mapped_column(Text)
    output: Mapped[str] = mapped_column(Text)
    tool_calls: Mapped[list[Any]] = mapped_column(JSONDoc)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONDoc)
    occurred_at: Mapped[datetime]
    created_at: Mapped[datetime]
    # Recall (migration 0003). NULL for rows written before it existed.
    embedding: Mapped[Any] = mapped_column(Vector, nullable=True)
    # A long text's passages, embedded one by one (migration 0011): recall scores
    # the row by its best passage too, since a mean over a long text dilutes
    # the one paragraph a query is about. NULL when the text is one passage.
    passages: Mapped[Any] = mapped_column(VectorList, nullable=True)
    # What keyword search indexes: the text plus the date it happened in words.
    search_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Position within the session in insertion order (neighbour context for recall).
    turn: Mapped[int | None] = mapped_column(Integer, nullable=True)

    __table_args__ = (
        Index(None, "user_id", "session_id", "occurred_at"),
        Index(None, "user_id", "occurred_at"),
        # Turns are unique per session (migration 0006); SessionTurnRow hands them out.
        Index("uq_episodes_session_turn", "user_id", "session_id", "turn", unique=True),
    )


class SessionTurnRow(Base):
    """The next turn number of one session: the counter concurrent writers serialise on.

    ``remember``/``remember_many`` reserve turns with one upsert that increments it
    and returns the new value (like ``threads.next_slot_index``), so two writers
    never read the same ``max(turn)``; the unique index on episodes is the backstop.
    """

    __tablename__ = "session_turns"

    user_id: Mapped[TenantId]
    session_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    next_turn: Mapped[int] = mapped_column(Integer)
