"""core schema: episodes, bi-temporal facts, working blocks with history

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Self-contained column types: a revision must not change when application types do.
JSONDoc = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TS = sa.DateTime(timezone=True)
TENANT = sa.String(length=255)


def upgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")

    op.create_table(
        "episodes",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("tool_calls", JSONDoc, nullable=False),
        sa.Column("metadata", JSONDoc, nullable=False),
        sa.Column("occurred_at", TS, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "id", name=op.f("pk_episodes")),
    )
    op.create_index(op.f("ix_episodes_user_id_occurred_at"), "episodes", ["user_id", "occurred_at"])
    op.create_index(
        op.f("ix_episodes_user_id_session_id_occurred_at"),
        "episodes",
        ["user_id", "session_id", "occurred_at"],
    )

    op.create_table(
        "facts",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("fact_id", sa.String(length=36), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("predicate", sa.String(length=255), nullable=False),
        sa.Column("object", sa.Text(), nullable=False),
        sa.Column("single_valued", sa.Boolean(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("sources", JSONDoc, nullable=False),
        sa.Column("valid_from", TS, nullable=False),
        sa.Column("valid_to", TS, nullable=True),
        sa.Column("recorded_at", TS, nullable=False),
        sa.Column("superseded_at", TS, nullable=True),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name=op.f("ck_facts_confidence_range")
        ),
        sa.CheckConstraint(
            "valid_to IS NULL OR valid_to > valid_from", name=op.f("ck_facts_valid_interval")
        ),
        sa.PrimaryKeyConstraint("user_id", "id", name=op.f("pk_facts")),
    )
    op.create_index(
        op.f("ix_facts_user_id_subject_predicate_recorded_at"),
        "facts",
        ["user_id", "subject", "predicate", "recorded_at"],
    )
    current = sa.text("superseded_at IS NULL")
    op.create_index(
        "uq_facts_current_version",
        "facts",
        ["user_id", "fact_id"],
        unique=True,
        sqlite_where=current,
        postgresql_where=current,
    )
    open_single = sa.text("superseded_at IS NULL AND valid_to IS NULL AND single_valued")
    op.create_index(
        "uq_facts_current_single_value",
        "facts",
        ["user_id", "subject", "predicate"],
        unique=True,
        sqlite_where=open_single,
        postgresql_where=open_single,
    )

    op.create_table(
        "blocks",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("pinned_order", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "name", name=op.f("pk_blocks")),
    )
    op.create_table(
        "block_versions",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id", "name"],
            ["blocks.user_id", "blocks.name"],
            name=op.f("fk_block_versions_user_id_name_blocks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "name", "version", name=op.f("pk_block_versions")),
    )


def downgrade() -> None:
    op.drop_table("block_versions")
    op.drop_table("blocks")
    op.drop_index("uq_facts_current_single_value", table_name="facts")
    op.drop_index("uq_facts_current_version", table_name="facts")
    op.drop_index(op.f("ix_facts_user_id_subject_predicate_recorded_at"), table_name="facts")
    op.drop_table("facts")
    op.drop_index(op.f("ix_episodes_user_id_session_id_occurred_at"), table_name="episodes")
    op.drop_index(op.f("ix_episodes_user_id_occurred_at"), table_name="episodes")
    op.drop_table("episodes")
    # The vector extension stays: other schemas in the database may use it.
