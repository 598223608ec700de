"""items of the LangGraph store integration

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Self-contained column types: a revision must not change when application types do.
TS = sa.DateTime(timezone=True)
TENANT = sa.String(length=255)
JSONDoc = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "langgraph_items",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("namespace", sa.String(length=1024), nullable=False),
        sa.Column("key", sa.String(length=1024), nullable=False),
        sa.Column("value", JSONDoc, nullable=False),
        sa.Column("vectors", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("ttl_minutes", sa.Float(), nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("user_id", "namespace", "key", name=op.f("pk_langgraph_items")),
    )
    op.create_index(
        op.f("ix_langgraph_items_user_id_expires_at"),
        "langgraph_items",
        ["user_id", "expires_at"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_langgraph_items_user_id_expires_at"), table_name="langgraph_items")
    op.drop_table("langgraph_items")
