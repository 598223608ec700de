"""unique session turns (per-session counters) and digest keys for long fact subjects

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

Session turns: two writers used to read the same ``max(turn)`` and give one turn to
several episodes. Existing duplicates are *renumbered* (not refused): within each
session that has duplicates, turns become 0, 1, 2, … in the order (old turn,
created_at, id), which keeps the order they were written in as far as it is known.
Turns only order a session for recall context, so renumbering loses nothing. Then
``session_turns`` holds each session's next turn and a unique index on
``(user_id, session_id, turn)`` makes a duplicate impossible.

Fact subjects (up to 2,000 characters) are indexed through ``subject_key``, their
SHA-256 in hex: Postgres b-tree entries hold at most 2,704 bytes, so an index on
the subject itself refused valid long subjects.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TENANT = sa.String(length=255)
SINGLE_VALUE_WHERE = "superseded_at IS NULL AND valid_to IS NULL AND single_valued"

RENUMBER_DUPLICATE_TURNS = """
UPDATE episodes SET turn = r.rn
FROM (
    SELECT user_id, id,
           row_number() OVER (PARTITION BY user_id, session_id
                              ORDER BY turn, created_at, id) - 1 AS rn
    FROM episodes
    WHERE turn IS NOT NULL AND (user_id, session_id) IN (
        SELECT user_id, session_id FROM episodes WHERE turn IS NOT NULL
        GROUP BY user_id, session_id HAVING count(*) <> count(DISTINCT turn)
    )
) AS r
WHERE episodes.user_id = r.user_id AND episodes.id = r.id AND episodes.turn <> r.rn
"""


def upgrade() -> None:
    dialect = op.get_context().dialect.name

    op.create_table(
        "session_turns",
        sa.Column("user_id", TENANT, nullable=False),
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("next_turn", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", name=op.f("pk_session_turns")),
    )
    op.execute(RENUMBER_DUPLICATE_TURNS)
    op.execute(
        "INSERT INTO session_turns (user_id, session_id, next_turn) "
        "SELECT user_id, session_id, COALESCE(max(turn) + 1, 0) FROM episodes "
        "GROUP BY user_id, session_id"
    )
    op.drop_index(op.f("ix_episodes_user_id_session_id_turn"), table_name="episodes")
    op.create_index(
        "uq_episodes_session_turn", "episodes", ["user_id", "session_id", "turn"], unique=True
    )

    # NOT NULL with a temporary default so the column can be added in place on
    # SQLite (a batch rebuild of facts would drop its full-text triggers).
    op.add_column(
        "facts",
        sa.Column("subject_key", sa.String(length=64), nullable=False, server_default=""),
    )
    if dialect == "postgresql":
        op.execute(
            "UPDATE facts SET subject_key = encode(sha256(convert_to(subject, 'UTF8')), 'hex')"
        )
        op.alter_column("facts", "subject_key", server_default=None)
    else:
        _backfill_subject_keys_in_python()
    op.drop_index("uq_facts_current_single_value", table_name="facts")
    op.drop_index(op.f("ix_facts_user_id_subject_predicate_recorded_at"), table_name="facts")
    op.create_index(
        op.f("ix_facts_user_id_subject_key_predicate_recorded_at"),
        "facts",
        ["user_id", "subject_key", "predicate", "recorded_at"],
    )
    _single_value_index("subject_key")


def _single_value_index(subject_column: str) -> None:
    where = sa.text(SINGLE_VALUE_WHERE)
    op.create_index(
        "uq_facts_current_single_value",
        "facts",
        ["user_id", subject_column, "predicate"],
        unique=True,
        sqlite_where=where,
        postgresql_where=where,
    )


def _backfill_subject_keys_in_python() -> None:
    # SQLite has no SHA-256 function; the digest is the one the application writes.
    import hashlib

    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT user_id, id, subject FROM facts")).all()
    if rows:
        bind.execute(
            sa.text("UPDATE facts SET subject_key = :key WHERE user_id = :user_id AND id = :id"),
            [
                {"key": hashlib.sha256(subject.encode("utf-8")).hexdigest(), "user_id": u, "id": i}
                for u, i, subject in rows
            ],
        )


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    op.drop_index("uq_facts_current_single_value", table_name="facts")
    op.drop_index(op.f("ix_facts_user_id_subject_key_predicate_recorded_at"), table_name="facts")
    op.create_index(
        op.f("ix_facts_user_id_subject_predicate_recorded_at"),
        "facts",
        ["user_id", "subject", "predicate", "recorded_at"],
    )
    _single_value_index("subject")
    if dialect == "sqlite":
        # In place (SQLite >= 3.35): a batch rebuild would drop the FTS triggers.
        op.execute("ALTER TABLE facts DROP COLUMN subject_key")
    else:
        op.drop_column("facts", "subject_key")

    op.drop_index("uq_episodes_session_turn", table_name="episodes")
    op.create_index(
        op.f("ix_episodes_user_id_session_id_turn"), "episodes", ["user_id", "session_id", "turn"]
    )
    op.drop_table("session_turns")
