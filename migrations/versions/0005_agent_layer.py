"""access tracking for the agent-facing layer

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Self-contained column types: a revision must not change when application types do.
TS = sa.DateTime(timezone=True)
TENANT = sa.String(length=255)


def upgrade() -> None:
    op.create_table(
        "access_stats",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.String(length=255), nullable=False),
        sa.Column("access_count", sa.BigInteger(), nullable=False),
        sa.Column("last_accessed_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "kind", "item_id", name=op.f("pk_access_stats")),
    )
    op.create_index(
        op.f("ix_access_stats_user_id_kind_access_count"),
        "access_stats",
        ["user_id", "kind", "access_count"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_access_stats_user_id_kind_access_count"), table_name="access_stats")
    op.drop_table("access_stats")
