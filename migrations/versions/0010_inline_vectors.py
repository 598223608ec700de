"""Postgres: vectors stay in their row (STORAGE MAIN)

pgvector declares ``vector`` with EXTERNAL storage, so once a row passes the
~2 kB TOAST threshold (a 384-d vector is 1.5 kB; add a turn of text) the vector
is the first column moved out of line, and an exact per-tenant scan pays a TOAST
index lookup for every distance. With MAIN, Postgres compresses or moves the
text columns out first and keeps the vector in the row.

Only rows written after this revision are stored the new way; it changes no
data and takes no long lock. Rows already out of line move back when rewritten
(``VACUUM FULL episodes, facts`` or pg_repack, at a quiet time). SQLite stores
vectors as blobs in the row already. On a Citus cluster distributed before this
revision, the storage is set on every shard by manual propagation (Citus does not
propagate SET STORAGE); distributed after it, the shards are created with it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

from memstore.db.distribution import set_column_storage, set_shard_column_storage

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of memstore.models.search.VECTOR_TABLES / VECTOR_STORAGE.
TABLES = ("episodes", "facts")


def _set_storage(table: str, storage: str) -> None:
    bind = op.get_bind()
    if not set_column_storage(bind, table, "embedding", storage):
        return
    # The shards are changed on Citus's own connections: if an earlier revision of
    # this same run changed them, they stay locked until it commits. So a clear error
    # naming the way that works.
    failed = set_shard_column_storage(bind, table, "embedding", storage)
    if failed:
        from memstore.errors import ConfigurationError

        raise ConfigurationError(
            f"revision 0010 could not change the vector storage of {len(failed)} shard(s) "
            f"of distributed table {table} ({failed[0]}); nothing was changed. On a "
            "Citus cluster run this revision on its own: `memstore migrate --revision 0009`, "
            "then `memstore migrate --revision 0010`, then `memstore migrate`",
            setting="revision",
        )


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for table in TABLES:
        _set_storage(table, "MAIN")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for table in TABLES:
        _set_storage(table, "EXTERNAL")
