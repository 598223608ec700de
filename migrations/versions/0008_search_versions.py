"""SQLite: search versions for the vector cache; the FTS5 instance list for BM25

Every insert, update and delete of a tenant's episodes gives the tenant a new
random version in the same transaction (triggers), so a reader can tell
whether the vectors it cached are still those of its snapshot
(memstore/search/vector_cache.py). ``episodes_fts_instances`` exposes
the FTS5 index's term occurrences, from which recall's one statement counts
term frequencies (memstore/search/sqlite.py). Postgres needs none
of this.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A new random version for the tenant of {row} ("new" or "old").
_BUMP = (
    "INSERT INTO search_versions (user_id, tbl, version) "
    "VALUES ({row}.user_id, 'episodes', random()) "
    "ON CONFLICT (user_id, tbl) DO UPDATE SET version = excluded.version;"
)


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute(
        "CREATE VIRTUAL TABLE episodes_fts_instances USING fts5vocab(episodes_fts, instance)"
    )
    op.execute(
        "CREATE TABLE search_versions (user_id VARCHAR(255) NOT NULL, "
        "tbl VARCHAR(32) NOT NULL, version BIGINT NOT NULL, PRIMARY KEY (user_id, tbl))"
    )
    op.execute(
        "INSERT INTO search_versions (user_id, tbl, version) "
        "SELECT user_id, 'episodes', random() FROM (SELECT DISTINCT user_id FROM episodes)"
    )
    op.execute(
        "CREATE TRIGGER episodes_search_version_insert AFTER INSERT ON episodes BEGIN "
        + _BUMP.format(row="new")
        + " END"
    )
    op.execute(
        "CREATE TRIGGER episodes_search_version_update AFTER UPDATE ON episodes BEGIN "
        + _BUMP.format(row="new")
        + " END"
    )
    # A delete only changes a version that exists: erasing a whole tenant
    # removes its row (whatever the order of the deletes) and nothing brings it back.
    op.execute(
        "CREATE TRIGGER episodes_search_version_delete AFTER DELETE ON episodes BEGIN "
        "UPDATE search_versions SET version = random() "
        "WHERE user_id = old.user_id AND tbl = 'episodes'; END"
    )


def downgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS episodes_search_version_{event}")
    op.execute("DROP TABLE IF EXISTS search_versions")
    op.execute("DROP TABLE IF EXISTS episodes_fts_instances")
