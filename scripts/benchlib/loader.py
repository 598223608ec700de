"""Bulk-load a workload into memstore's episodes table the fastest raw way.

Postgres: secondary indexes are dropped, rows COPYed, and the indexes rebuilt
from their saved definitions (each build timed), as one would load a big store.
SQLite: executemany per 10,000 rows with the migrated schema (FTS triggers run).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .context import Target
from .data import Chunk, Workload, episode_id
from .raw import pg_connect, pg_copy, sqlite_connect, sqlite_insert
from .rows import Turns, raw_records, row_values

__all__ = ["LoadReport", "load_episodes"]

CHUNK = 10_000


class LoadReport:
    def __init__(self) -> None:
        self.rows = 0
        self.copy_seconds = 0.0
        self.index_seconds: dict[str, float] = {}

    def describe(self) -> str:
        parts = [f"{self.rows:,} rows written in {self.copy_seconds:.0f} s"]
        parts += [f"{name} built in {secs:.0f} s" for name, secs in self.index_seconds.items()]
        return "; ".join(parts)


async def load_episodes(
    target: Target,
    work: Workload,
    *,
    keep: Callable[[Chunk, int], bool] | None = None,
    collect: Callable[[str, int, np.ndarray, Chunk, int], None] | None = None,
    tenant: str | None = None,
    log: Any = print,
) -> LoadReport:
    from sqlalchemy import Table
    from sqlalchemy.dialects import postgresql, sqlite

    from memstore.models import EpisodeRow
    from memstore.types import utcnow

    table = EpisodeRow.__table__
    assert isinstance(table, Table)  # typed as any FromClause; a declarative table here
    pg = target.backend == "postgres"
    # SQLAlchemy leaves PGDialect.__init__ unannotated.
    dialect = postgresql.asyncpg.dialect() if pg else sqlite.dialect()  # type: ignore[no-untyped-call]
    report = LoadReport()
    turns = Turns()
    # An asyncpg connection (untyped) when pg, else a sqlite3.Connection.
    conn: Any = await pg_connect(target.raw) if pg else sqlite_connect(target.raw)
    try:
        indexes: list[tuple[str, str]] = []
        if pg:
            indexes = [
                (r["indexname"], r["indexdef"])
                for r in await conn.fetch(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'episodes' "
                    "AND indexname NOT LIKE 'pk_%'"
                )
            ]
            for name, _ in indexes:
                await conn.execute(f'DROP INDEX "{name}"')
        start = time.perf_counter()
        now = utcnow()
        for n, chunk in enumerate(work.chunks(CHUNK)):
            rows = [i for i in range(len(chunk)) if keep is None or keep(chunk, i)]
            values = [row_values(work, chunk, i, now, turns, tenant) for i in rows]
            if not values:
                continue
            if collect is not None:
                for i, v in zip(rows, values, strict=True):
                    collect(v["user_id"], chunk.start + i, chunk.vectors[i], chunk, i)
            names, records = raw_records(table, dialect, values)
            if pg:
                await pg_copy(conn, table.name, names, records)
            else:
                sqlite_insert(conn, table.name, names, records)
            report.rows += len(records)
            if n % 10 == 9:
                log(f"    loaded {report.rows:,} rows")
        report.copy_seconds = time.perf_counter() - start
        for name, definition in indexes:
            log(f"    building {name} ...")
            t = time.perf_counter()
            await conn.execute(definition)
            report.index_seconds[name] = time.perf_counter() - t
        if pg:
            await conn.execute("ANALYZE episodes")
        else:
            conn.execute("ANALYZE")
    finally:
        if pg:
            await conn.close()
        else:
            conn.close()
    return report


def ids_for(work: Workload, rows: list[int]) -> list[str]:
    return [episode_id(work.seed, r) for r in rows]
