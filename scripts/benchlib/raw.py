"""Hand-written baselines on the same tables: asyncpg COPY / queries, sqlite3 executemany."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

__all__ = [
    "SqliteQueries",
    "pg_connect",
    "pg_copy",
    "pg_insert_many",
    "sqlite_connect",
    "sqlite_insert",
    "sqlite_path",
]


async def pg_connect(dsn: str) -> Any:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    if await conn.fetchval("SELECT 1 FROM pg_type WHERE typname = 'vector'"):
        from pgvector.asyncpg import register_vector

        await register_vector(conn)
    return conn


async def pg_copy(
    conn: Any, table: str, columns: Sequence[str], records: Sequence[tuple[Any, ...]]
) -> None:
    async with conn.transaction():
        await conn.copy_records_to_table(table, records=records, columns=list(columns))


async def pg_insert_many(
    conn: Any, table: str, columns: Sequence[str], records: Sequence[tuple[Any, ...]]
) -> None:
    """A prepared INSERT run for every row (asyncpg executemany), one transaction."""
    cols = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join(f"${i + 1}" for i in range(len(columns)))
    async with conn.transaction():
        await conn.executemany(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', records)


def sqlite_path(url: str) -> str:
    return url.split(":///", 1)[1]


def sqlite_connect(url: str) -> sqlite3.Connection:
    # Same pragmas as memstore's engine, so only the code path differs.
    conn = sqlite3.connect(sqlite_path(url), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def sqlite_insert(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], records: Sequence[tuple[Any, ...]]
) -> None:
    cols = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', records)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class SqliteQueries:
    """Hand-written queries through aiosqlite, the driver memstore itself uses.

    An async application querying SQLite by hand would use the same driver, so
    the per-query thread hop is part of both sides: one hop (``execute_fetchall``),
    as memstore's reads on the driver take.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: Any = None

    async def __aenter__(self) -> SqliteQueries:
        import aiosqlite

        self.conn = await aiosqlite.connect(sqlite_path(self.url))
        await self.conn.execute("PRAGMA journal_mode = WAL")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.conn.close()

    async def fetch(self, sql: str, params: Any = ()) -> list[Any]:
        return list(await self.conn.execute_fetchall(sql, params))
