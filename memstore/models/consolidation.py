from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKeyConstraint, String
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId


class EpisodeConsolidationRow(Base):
    """Consolidation state of one episode, kept apart from the episode row itself.

    No row (or ``consolidated_at`` NULL) means the episode still awaits
    consolidation. ``claimed_by`` / ``claim_expires_at`` are a worker's lease on the episode
    (see :mod:`memstore.services.consolidation.consolidator`).
    """

    __tablename__ = "episode_consolidation"

    user_id: Mapped[TenantId]
    episode_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    claimed_by: Mapped[str | None] = mapped_column(String(255), nullable=True)
    claim_expires_at: Mapped[datetime | None]
    consolidated_at: Mapped[datetime | None]

    __table_args__ = (
        # Forgetting an episode (by session or age) drops its state with it.
        ForeignKeyConstraint(
            ["user_id", "episode_id"], ["episodes.user_id", "episodes.id"], ondelete="CASCADE"
        ),
    )
