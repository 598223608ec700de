"""Postgres: vectors stay in their row (STORAGE MAIN)

pgvector declares ``vector`` with EXTERNAL storage, so once a row passes the
~2 kB TOAST threshold (a 384-d vector is 1.5 kB; add a turn of text) the vector
is the first column moved out of line, and an exact per-tenant scan pays a TOAST
index lookup for every distance. With MAIN, Postgres compresses or moves the
text columns out first and keeps the vector in the row.

Only rows written after this revision are stored the new way; it changes no
data and takes no long lock. Rows already out of line move back when rewritten
(``VACUUM FULL episodes, facts`` or pg_repack, at a quiet time). SQLite stores
vectors as blobs in the row already.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of memstore.models.search.VECTOR_TABLES / VECTOR_STORAGE.
TABLES = ("episodes", "facts")


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE EXTERNAL")
