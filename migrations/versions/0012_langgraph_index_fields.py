"""langgraph_items.index_fields: the JSON paths an item's vectors were computed from

``memstore reembed`` and imports from another embedder compute an item's vectors
again from these paths; without them an item's vectors could only stay in the old
embedder's space. Existing rows get NULL: ``reembed`` refuses to leave their vectors
behind and says how to write them again.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Self-contained column type: a revision must not change when application types do.
JSONDoc = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("langgraph_items") as batch:
        batch.add_column(sa.Column("index_fields", JSONDoc, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("langgraph_items") as batch:
        batch.drop_column("index_fields")
