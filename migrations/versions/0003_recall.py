"""embeddings and full-text search for semantic and hybrid recall

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

The embedding width is fixed here, once per database: ``alembic -x embedding_dim=768
upgrade head`` or ``MEMSTORE_EMBEDDING_DIM=768``; default 384 (all-MiniLM-L6-v2 and the
built-in hashing embedder). It is recorded in ``memstore_config`` and stores opened with
an embedder of another width are refused. To change it later, downgrade to 0002 and
upgrade again with the new width (stored embeddings are dropped; re-remember or
re-embed).
"""

import os
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_DIM = 384
# pgvector indexes (HNSW) support at most 2000 dimensions for `vector`.
MAX_INDEXED_DIM = 2000


def embedding_dim() -> int:
    raw = (
        context.get_x_argument(as_dictionary=True).get("embedding_dim")
        or os.environ.get("MEMSTORE_EMBEDDING_DIM")
        or str(DEFAULT_DIM)
    )
    try:
        dim = int(raw)
    except ValueError:
        raise ValueError(f"embedding_dim must be an integer, got {raw!r}") from None
    if not 1 <= dim <= MAX_INDEXED_DIM:
        raise ValueError(f"embedding_dim must be between 1 and {MAX_INDEXED_DIM}, got {dim}")
    return dim


# Postgres full-text documents; recall queries use exactly these expressions.
EPISODE_TSV = "to_tsvector('simple', coalesce(search_text, ''))"
FACT_TSV = "to_tsvector('simple', subject || ' ' || replace(predicate, '_', ' ') || ' ' || object)"
FACT_TEXT_SQLITE = "{r}.subject || ' ' || replace({r}.predicate, '_', ' ') || ' ' || {r}.object"


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    dim = embedding_dim()
    vector = _pg_vector(dim) if dialect == "postgresql" else sa.LargeBinary()

    config = op.create_table(
        "memstore_config",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_memstore_config")),
    )
    op.bulk_insert(config, [{"key": "embedding_dim", "value": str(dim)}])

    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("embedding", vector, nullable=True))
        batch.add_column(sa.Column("search_text", sa.Text(), nullable=True))
        batch.add_column(sa.Column("turn", sa.Integer(), nullable=True))
        batch.create_index(
            op.f("ix_episodes_user_id_session_id_turn"), ["user_id", "session_id", "turn"]
        )
    with op.batch_alter_table("facts") as batch:
        batch.add_column(sa.Column("embedding", vector, nullable=True))

    # Episodes written before this revision become keyword-searchable too.
    op.execute("UPDATE episodes SET search_text = input || ' ' || output")

    if dialect == "postgresql":
        op.execute(
            "CREATE INDEX ix_episodes_embedding_hnsw ON episodes "
            "USING hnsw (embedding vector_cosine_ops)"
        )
        op.execute(f"CREATE INDEX ix_episodes_search_fts ON episodes USING gin ({EPISODE_TSV})")
        op.execute(f"CREATE INDEX ix_facts_search_fts ON facts USING gin ({FACT_TSV})")
    elif dialect == "sqlite":
        _create_sqlite_fts()


def _pg_vector(dim: int) -> sa.types.TypeEngine:  # type: ignore[type-arg]
    class _Vector(sa.types.UserDefinedType):  # type: ignore[type-arg]
        cache_ok = True

        def get_col_spec(self, **kw: object) -> str:
            return f"vector({dim})"

    return _Vector()


def _create_sqlite_fts() -> None:
    # FTS5 rows are addressed by integer rowid; the *_fts_keys tables map a
    # row's (user_id, id) to it so the delete triggers find it through an index
    # instead of scanning the whole full-text table.
    for table, key, text in (
        ("episodes", "id", "coalesce(new.search_text, '')"),
        ("facts", "id", FACT_TEXT_SQLITE.format(r="new")),
    ):
        op.execute(
            f"CREATE TABLE {table}_fts_keys (rowid INTEGER PRIMARY KEY, "
            f"user_id VARCHAR(255) NOT NULL, {key} VARCHAR(36) NOT NULL, "
            f"UNIQUE (user_id, {key}))"
        )
        op.execute(f"CREATE VIRTUAL TABLE {table}_fts USING fts5(text, tokenize = 'unicode61')")
        op.execute(
            f"CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {table}_fts_keys (user_id, {key}) VALUES (new.user_id, new.{key}); "
            f"INSERT INTO {table}_fts (rowid, text) VALUES (last_insert_rowid(), {text}); "
            "END"
        )
        op.execute(
            f"CREATE TRIGGER {table}_fts_delete AFTER DELETE ON {table} BEGIN "
            f"DELETE FROM {table}_fts WHERE rowid = (SELECT rowid FROM {table}_fts_keys "
            f"WHERE user_id = old.user_id AND {key} = old.{key}); "
            f"DELETE FROM {table}_fts_keys WHERE user_id = old.user_id AND {key} = old.{key}; "
            "END"
        )
    op.execute("INSERT INTO episodes_fts_keys (user_id, id) SELECT user_id, id FROM episodes")
    op.execute(
        "INSERT INTO episodes_fts (rowid, text) SELECT k.rowid, e.search_text "
        "FROM episodes_fts_keys k JOIN episodes e ON e.user_id = k.user_id AND e.id = k.id"
    )
    op.execute("INSERT INTO facts_fts_keys (user_id, id) SELECT user_id, id FROM facts")
    op.execute(
        "INSERT INTO facts_fts (rowid, text) SELECT k.rowid, "
        + FACT_TEXT_SQLITE.format(r="f")
        + " FROM facts_fts_keys k JOIN facts f ON f.user_id = k.user_id AND f.id = k.id"
    )


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    if dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_facts_search_fts")
        op.execute("DROP INDEX IF EXISTS ix_episodes_search_fts")
        op.execute("DROP INDEX IF EXISTS ix_episodes_embedding_hnsw")
    elif dialect == "sqlite":
        for table in ("episodes", "facts"):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_fts_insert")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_fts_delete")
            op.execute(f"DROP TABLE IF EXISTS {table}_fts")
            op.execute(f"DROP TABLE IF EXISTS {table}_fts_keys")
    with op.batch_alter_table("facts") as batch:
        batch.drop_column("embedding")
    with op.batch_alter_table("episodes") as batch:
        batch.drop_index(op.f("ix_episodes_user_id_session_id_turn"))
        batch.drop_column("turn")
        batch.drop_column("search_text")
        batch.drop_column("embedding")
    op.drop_table("memstore_config")
