"""consolidation claims and state

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

One row per episode that a consolidator has claimed (SQLite lease) or
consolidated; episodes without a row are still waiting.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "episode_consolidation",
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("episode_id", sa.String(length=36), nullable=False),
        sa.Column("claimed_by", sa.String(length=255), nullable=True),
        sa.Column("claim_expires_at", TS, nullable=True),
        sa.Column("consolidated_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id", "episode_id"],
            ["episodes.user_id", "episodes.id"],
            name=op.f("fk_episode_consolidation_user_id_episode_id_episodes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "episode_id", name=op.f("pk_episode_consolidation")),
    )


def downgrade() -> None:
    op.drop_table("episode_consolidation")
