"""SQLite: the FTS5 instance list of facts, for ranking facts in one statement

``facts_fts_instances`` exposes the facts' FTS5 index term occurrences, from
which fact recall counts term frequencies for BM25 in SQL, as episode recall
does since revision 0008 (memstore/search/sqlite.py). A fts5vocab table stores
nothing of its own. Postgres reads its term counts from tsvectors and needs none.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute("CREATE VIRTUAL TABLE facts_fts_instances USING fts5vocab(facts_fts, instance)")


def downgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE IF EXISTS facts_fts_instances")
