"""The search indexes a migrated database holds are the ones defined in code.

Postgres only uses a GIN full-text index when the query repeats the index's
expression; the migration keeps a frozen copy of it, so this test is what keeps
the two equal (memstore/models/search.py and each backend's indexes.py).
"""

from __future__ import annotations

import re

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from memstore.backends.postgresql.indexes import (
    FULL_TEXT_INDEXES,
    STORED_TSVECTORS,
    VECTOR_INDEX,
    VECTOR_STORAGE,
    computed_tsvector,
    tsvector,
)
from memstore.backends.sqlite.indexes import FTS5_TABLE_ARGS
from memstore.db.engine import resolve_url
from memstore.models import EpisodeRow, FactRow
from memstore.models.search import VECTOR_TABLES, document
from memstore.search.tables import row_text
from tests.conftest import is_postgres


async def _indexdef(conn: AsyncConnection, name: str) -> str:
    found = await conn.scalar(
        text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": name}
    )
    assert found is not None, f"index {name} missing"
    return str(found)


async def _as_postgres_writes_it(conn: AsyncConnection, table: str, method: str) -> str:
    """How Postgres itself prints an index of ``method`` on ``table`` (then dropped)."""
    await conn.execute(text(f"CREATE INDEX memstore_probe ON {table} USING {method}"))
    printed = await _indexdef(conn, "memstore_probe")
    await conn.execute(text("DROP INDEX memstore_probe"))
    return printed.replace("memstore_probe", "{name}")


async def test_postgres_indexes_match_the_code(db_url: str, backend: str) -> None:
    engine = create_async_engine(resolve_url(db_url))
    try:
        async with engine.begin() as conn:
            if is_postgres(backend):
                for table, name in FULL_TEXT_INDEXES.items():
                    expected = await _as_postgres_writes_it(conn, table, f"gin ({tsvector(table)})")
                    assert await _indexdef(conn, name) == expected.format(name=name)
                for table, column in STORED_TSVECTORS.items():
                    # The stored column holds what the expression computes.
                    probe = await _as_postgres_writes_it(
                        conn, table, f"gin ({computed_tsvector(table)})"
                    )
                    printed = probe[probe.index("gin (") + 5 : -1]
                    generated = await conn.scalar(
                        text(
                            "SELECT generation_expression FROM information_schema.columns "
                            "WHERE table_name = :t AND column_name = :c"
                        ),
                        {"t": table, "c": column},
                    )
                    assert generated == printed
                name, table, method = VECTOR_INDEX
                expected = await _as_postgres_writes_it(conn, table, method)
                assert await _indexdef(conn, name) == expected.format(name=name)
            else:
                for table in ("episodes", "facts"):
                    created = await conn.scalar(
                        text("SELECT sql FROM sqlite_master WHERE name = :n"), {"n": f"{table}_fts"}
                    )
                    assert re.search(rf"USING fts5\({re.escape(FTS5_TABLE_ARGS)}\)", created)
                    trigger = await conn.scalar(
                        text("SELECT sql FROM sqlite_master WHERE name = :n"),
                        {"n": f"{table}_fts_insert"},
                    )
                    # The trigger fills the full-text table with the code's document.
                    assert f"VALUES (last_insert_rowid(), {document(table, 'new.')})" in trigger
            await conn.rollback()
    finally:
        await engine.dispose()


def test_recall_statements_use_the_defined_expressions() -> None:
    from memstore.backends.postgresql.search import full_text_vector

    for model in (EpisodeRow, FactRow):
        name = model.__tablename__
        assert str(full_text_vector(model)) == tsvector(name, prefix=f"{name}.")
        assert str(row_text(model)) == document(name, prefix=f"{name}.")


async def vector_storage_of(conn: AsyncConnection) -> dict[str, str]:
    """Postgres: each vector table's ``embedding`` storage, as ALTER ... SET STORAGE names it."""
    names = {"p": "PLAIN", "e": "EXTERNAL", "m": "MAIN", "x": "EXTENDED"}
    rows = await conn.execute(
        text(
            "SELECT c.relname, CAST(a.attstorage AS text) FROM pg_attribute AS a "
            "JOIN pg_class AS c ON c.oid = a.attrelid "
            "WHERE a.attname = 'embedding' AND c.relname = ANY(:tables)"
        ),
        {"tables": list(VECTOR_TABLES)},
    )
    return {table: names[str(letter)] for table, letter in rows.all()}


async def test_postgres_vectors_are_stored_as_the_code_says(db_url: str, backend: str) -> None:
    if not is_postgres(backend):
        return  # SQLite keeps vectors as blobs in the row; there is no storage setting
    engine = create_async_engine(resolve_url(db_url))
    try:
        async with engine.connect() as conn:
            assert await vector_storage_of(conn) == dict.fromkeys(VECTOR_TABLES, VECTOR_STORAGE)
    finally:
        await engine.dispose()
