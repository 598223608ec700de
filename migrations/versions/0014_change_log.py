"""the change log of store.changes(): per-tenant counters and change rows

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27

Adds ``change_heads`` (a tenant's change counter and the epoch of its positions)
and ``changes`` (one row per committed change of a block, a fact or a thread,
written in the change's own transaction). Only new tables: existing rows are
untouched, and changes committed before this revision are not in the log.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Self-contained column types: a revision must not change when application types do.
TS = sa.DateTime(timezone=True)
TENANT = sa.String(length=255)


def upgrade() -> None:
    op.create_table(
        "change_heads",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("epoch", sa.String(length=36), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("pruned_through", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_change_heads")),
    )
    op.create_table(
        "changes",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("slot_index", sa.Integer(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["change_heads.user_id"],
            name=op.f("fk_changes_user_id_change_heads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "seq", name=op.f("pk_changes")),
    )
    op.create_index(op.f("ix_changes_user_id_created_at"), "changes", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_changes_user_id_created_at"), table_name="changes")
    op.drop_table("changes")
    op.drop_table("change_heads")
