"""The change log read by ``store.changes()``: one row per committed change of a tenant.

Written in the same transaction as the change itself (block upsert, fact
assert / supersede / retract, thread append and delete), so a change is in the
log exactly when it is committed. ``seq`` is claimed from the tenant's
:class:`ChangeHeadRow` like a thread's next slot index (one upsert that reads
and increments), so a tenant's changes are numbered in commit order with no gap.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKeyConstraint, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId

__all__ = ["ChangeHeadRow", "ChangeRow"]


class ChangeHeadRow(Base):
    """A tenant's change counter, the epoch of its positions, and what gc pruned.

    ``epoch`` is random, drawn when the row is created and again by an import
    (which restores the row from a dump): ``forget`` deletes the row with the
    log, so positions handed out before a forget or an import name an epoch
    that no longer exists and an iterator resuming from one is told so.
    ``last_seq`` is the last number claimed (0: none); rows with ``seq <=
    pruned_through`` were removed by the retention of gc.
    """

    __tablename__ = "change_heads"

    user_id: Mapped[TenantId]
    epoch: Mapped[str] = mapped_column(String(36))
    last_seq: Mapped[int] = mapped_column(BigInteger)
    pruned_through: Mapped[int] = mapped_column(BigInteger)


class ChangeRow(Base):
    """One committed change: its kind, the key it concerns, and when."""

    __tablename__ = "changes"

    user_id: Mapped[TenantId]
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(255))
    slot_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime]

    __table_args__ = (
        ForeignKeyConstraint(["user_id"], ["change_heads.user_id"], ondelete="CASCADE"),
        # gc's retention deletes a tenant's rows by age.
        Index(None, "user_id", "created_at"),
    )
