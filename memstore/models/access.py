from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId


class AccessStatRow(Base):
    """How often, and when last, one memory item was recalled or loaded.

    ``kind`` is ``episode``, ``fact`` (keyed by the logical ``fact_id``) or
    ``block`` (keyed by name). Counters only: losing a few on a crash is fine,
    so they are written in batches, never on the caller's critical path.
    """

    __tablename__ = "access_stats"

    user_id: Mapped[TenantId]
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    access_count: Mapped[int] = mapped_column(BigInteger)
    last_accessed_at: Mapped[datetime]

    __table_args__ = (
        # Prefetch asks for "the hottest items of this kind for this user".
        Index(None, "user_id", "kind", "access_count"),
    )
