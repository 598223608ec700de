"""A new vector width on Postgres: the columns' type and storage, the HNSW index, Citus shards."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memstore.backends.postgresql.indexes import VECTOR_INDEX, VECTOR_STORAGE
from memstore.db.distribution import set_column_storage, set_shard_column_storage
from memstore.errors import ConfigurationError

__all__ = ["build_vector_index", "change_vector_width", "set_shard_storage"]


async def change_vector_width(conn: AsyncConnection, dim: int, tables: Sequence[str]) -> list[str]:
    """``vector(dim)`` columns (emptied) without their index; the Citus distributed
    tables whose shards still need their vector storage set once this commits."""
    distributed: list[str] = []
    await conn.execute(text(f"DROP INDEX IF EXISTS {VECTOR_INDEX[0]}"))
    for table in tables:
        await conn.execute(
            text(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dim)}) USING NULL")
        )
        # ALTER COLUMN ... TYPE resets the storage to the type's default.
        if await conn.run_sync(set_column_storage, table, "embedding", VECTOR_STORAGE):
            distributed.append(table)
    return distributed


async def build_vector_index(conn: AsyncConnection) -> None:
    name, table, method = VECTOR_INDEX
    await conn.execute(text(f"CREATE INDEX {name} ON {table} USING {method}"))


async def set_shard_storage(engine: AsyncEngine, tables: Sequence[str]) -> None:
    """Citus: the vector storage of every shard of ``tables``, once the new width committed.

    Citus changes shards only on connections of its own, which would wait for ever on
    the shard locks the re-embedding transaction holds; so this runs after it. Rows
    that transaction wrote were stored with the type's default storage: they move into
    the row when next rewritten (as revision 0010 says for older rows).
    """
    for table in tables:
        async with engine.begin() as conn:
            failed = await conn.run_sync(
                set_shard_column_storage, table, "embedding", VECTOR_STORAGE
            )
        if failed:
            raise ConfigurationError(
                f"reembed: the vectors were re-embedded and committed, but the vector "
                f"storage of {len(failed)} shard(s) of distributed table {table} could not "
                f"be set to {VECTOR_STORAGE} ({failed[0]}); run "
                f"SELECT run_command_on_shards('{table}', 'ALTER TABLE %s ALTER COLUMN "
                f"embedding SET STORAGE {VECTOR_STORAGE}') on the coordinator",
                setting="citus",
            )
