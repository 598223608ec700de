from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId
from memstore.db.types import JSONDoc

__all__ = ["NO_SCOPE", "WorkingMemoryCheckpointRow", "WorkingMemoryRow"]

# A scope is the path project > agent instance > session; an absent level is
# stored as "" (identifiers are never empty), so each path maps to exactly one key.
NO_SCOPE = ""


class _Scoped:
    """The tenant and scope path: the leading columns of both tables' primary keys."""

    # Mixin columns would otherwise follow the table's own, reordering its key.
    user_id: Mapped[TenantId] = mapped_column(sort_order=-1)
    project_id: Mapped[str] = mapped_column(String(255), primary_key=True, sort_order=-1)
    agent_id: Mapped[str] = mapped_column(String(255), primary_key=True, sort_order=-1)
    session_id: Mapped[str] = mapped_column(String(255), primary_key=True, sort_order=-1)


class WorkingMemoryRow(_Scoped, Base):
    """One key of one scope's working memory; ``_``-prefixed keys are internal state."""

    __tablename__ = "working_memory"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONDoc)
    # NULL = never expires. Reads filter on expires_at > now; the sweep deletes the rest.
    expires_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]

    __table_args__ = (Index(None, "user_id", "expires_at"),)


class WorkingMemoryCheckpointRow(_Scoped, Base):
    """A snapshot of every key of one scope, restorable by its UUID."""

    __tablename__ = "working_memory_checkpoints"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    description: Mapped[str] = mapped_column(Text)
    data: Mapped[Any] = mapped_column(JSONDoc)
    created_at: Mapped[datetime]
