"""Postgres: episodes keep their tsvector in a stored generated column

Keyword recall reads each matching row's lexemes to count term frequencies
(BM25). With only an expression index, Postgres recomputed ``to_tsvector``
for every matching row on every query, the largest cost of a recall on a
tenant whose rows share common words. The GIN index now covers the stored
column. Adding the column rewrites the table (and rebuilds its indexes), so on
a large table this revision takes a while. SQLite needs none of this (FTS5
stores its index).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of memstore.models.search.computed_tsvector("episodes").
EPISODE_TSV = "to_tsvector('simple', coalesce(search_text, ''))"


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(
        f"ALTER TABLE episodes ADD COLUMN search_fts tsvector GENERATED ALWAYS AS ({EPISODE_TSV}) "
        "STORED"
    )
    op.execute("DROP INDEX IF EXISTS ix_episodes_search_fts")
    op.execute("CREATE INDEX ix_episodes_search_fts ON episodes USING gin (search_fts)")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_episodes_search_fts")
    op.execute("ALTER TABLE episodes DROP COLUMN IF EXISTS search_fts")
    op.execute(f"CREATE INDEX ix_episodes_search_fts ON episodes USING gin ({EPISODE_TSV})")
