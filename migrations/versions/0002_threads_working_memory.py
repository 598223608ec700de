"""thread context buffers and scoped working memory

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

Adds ``threads`` + ``slots`` (append-only context buffers; a trigger on each
database rejects UPDATE of a slot) and ``working_memory`` +
``working_memory_checkpoints`` (scoped key/value with TTL). Only new tables:
existing rows are untouched.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Self-contained column types: a revision must not change when application types do.
JSONDoc = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TS = sa.DateTime(timezone=True)
TENANT = sa.String(length=255)
NAME = sa.String(length=255)

REJECT_MESSAGE = "slots are append-only: UPDATE of a slot row is not allowed"
TRIGGER = "slots_reject_update"
PG_FUNCTION = "memstore_slots_reject_update"


def _scope_columns() -> list[sa.Column]:
    return [
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("project_id", NAME, nullable=False),
        sa.Column("agent_id", NAME, nullable=False),
        sa.Column("session_id", NAME, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("thread_id", NAME, nullable=False),
        sa.Column("next_slot_index", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("last_activity_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "thread_id", name=op.f("pk_threads")),
    )
    op.create_index(
        op.f("ix_threads_user_id_last_activity_at"), "threads", ["user_id", "last_activity_at"]
    )
    op.create_index(op.f("ix_threads_user_id_created_at"), "threads", ["user_id", "created_at"])

    op.create_table(
        "slots",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("thread_id", NAME, nullable=False),
        sa.Column("slot_index", sa.Integer(), nullable=False),
        sa.Column("from_id", NAME, nullable=False),
        sa.Column("to_id", NAME, nullable=False),
        sa.Column("payload_type", NAME, nullable=False),
        sa.Column("payload", JSONDoc, nullable=False),
        sa.Column("own_name", NAME, nullable=True),
        sa.Column("is_self_call", sa.Boolean(), nullable=False),
        sa.Column("usage_instructions", sa.Text(), nullable=False),
        sa.Column("todo_nudge", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id", "thread_id"],
            ["threads.user_id", "threads.thread_id"],
            name=op.f("fk_slots_user_id_thread_id_threads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "thread_id", "slot_index", name=op.f("pk_slots")),
    )

    op.create_table(
        "working_memory",
        *_scope_columns(),
        sa.Column("key", NAME, nullable=False),
        sa.Column("value", JSONDoc, nullable=False),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "user_id",
            "project_id",
            "agent_id",
            "session_id",
            "key",
            name=op.f("pk_working_memory"),
        ),
    )
    op.create_index(
        op.f("ix_working_memory_user_id_expires_at"), "working_memory", ["user_id", "expires_at"]
    )

    op.create_table(
        "working_memory_checkpoints",
        *_scope_columns(),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("data", JSONDoc, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint(
            "user_id",
            "project_id",
            "agent_id",
            "session_id",
            "id",
            name=op.f("pk_working_memory_checkpoints"),
        ),
    )

    # Slots are immutable: the database itself refuses UPDATE (DELETE stays
    # allowed for delete_thread, GC and forget). Alembic does not compare
    # triggers, so they live here only.
    if op.get_context().dialect.name == "postgresql":
        op.execute(
            f"""
            CREATE FUNCTION {PG_FUNCTION}() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '{REJECT_MESSAGE}'
                    USING ERRCODE = 'integrity_constraint_violation';
            END
            $$
            """
        )
        op.execute(
            f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON slots "
            f"FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()"
        )
    else:
        op.execute(
            f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON slots "
            f"BEGIN SELECT RAISE(ABORT, '{REJECT_MESSAGE}'); END"
        )


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON slots")
        op.execute(f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()")
    else:
        op.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}")
    op.drop_table("working_memory_checkpoints")
    op.drop_index(op.f("ix_working_memory_user_id_expires_at"), table_name="working_memory")
    op.drop_table("working_memory")
    op.drop_table("slots")
    op.drop_index(op.f("ix_threads_user_id_created_at"), table_name="threads")
    op.drop_index(op.f("ix_threads_user_id_last_activity_at"), table_name="threads")
    op.drop_table("threads")
