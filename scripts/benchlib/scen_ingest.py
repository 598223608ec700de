"""Scenario 1: remember_many in batches of 1,000 vs the fastest raw path, same table.

Both paths write into their own fresh database of the same schema, batch by
batch in alternation (memstore first on even batches, raw first on odd ones),
so load from other jobs on the machine hits both alike.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .context import Context, Target
from .data import Workload
from .ingest_util import drop_hnsw
from .memapi import LookupEmbedder, open_store
from .raw import pg_connect, pg_copy, sqlite_connect, sqlite_insert
from .rows import Turns, episodes_of, raw_records, row_values
from .stats import Samples, Section, ms

__all__ = ["run"]

BATCH = 1_000


def _dialect(backend: str) -> Any:
    from sqlalchemy.dialects import postgresql, sqlite

    return sqlite.dialect() if backend == "sqlite" else postgresql.asyncpg.dialect()


async def _alternate(mem: Target, raw: Target, work: Workload) -> tuple[Samples, Samples]:
    from memstore.models import EpisodeRow
    from memstore.types import utcnow

    backend = mem.backend
    table = EpisodeRow.__table__
    dialect = _dialect(backend)
    mem_s, raw_s = Samples(), Samples()
    turns = Turns()
    embedder = LookupEmbedder()
    conn = sqlite_connect(raw.raw) if backend == "sqlite" else await pg_connect(raw.raw)
    try:
        async with open_store(mem.url, embedder) as store:
            for n, chunk in enumerate(work.chunks(BATCH)):
                embedder.known.clear()
                episodes = episodes_of(work, chunk, embedder=embedder)
                now = utcnow()
                values = [row_values(work, chunk, i, now, turns) for i in range(len(chunk))]
                names, records = raw_records(table, dialect, values)

                for path in (("mem", "raw") if n % 2 == 0 else ("raw", "mem")):
                    start = time.perf_counter()
                    if path == "mem":
                        await store.remember_many(episodes)
                        mem_s.add(time.perf_counter() - start)
                    elif backend == "sqlite":
                        sqlite_insert(conn, table.name, names, records)
                        raw_s.add(time.perf_counter() - start)
                    else:
                        await pg_copy(conn, table.name, names, records)
                        raw_s.add(time.perf_counter() - start)
    finally:
        if backend == "sqlite":
            conn.close()
        else:
            await conn.close()
    return mem_s, raw_s


def _variant(ctx: Context, section: Section, backend: str, label: str, n: int,
             drop_index: bool) -> None:
    work = Workload(n, ctx.args.ingest_tenants, seed=11)
    raw_name = "asyncpg COPY" if backend == "postgres" else "sqlite3 executemany"
    mem_t, raw_t = ctx.fresh(backend, "ingest_mem"), ctx.fresh(backend, "ingest_raw")
    if drop_index:
        for t in (mem_t, raw_t):
            asyncio.run(drop_hnsw(t))
    ctx.log(f"  ingest {backend} {label}: {n:,} rows per path")
    mem, raw = asyncio.run(_alternate(mem_t, raw_t, work))
    mem_rate, raw_rate = n / mem.total, n / raw.total
    for name, s, rate in (("memstore remember_many", mem, mem_rate), (raw_name, raw, raw_rate)):
        section.add(**{
            "backend": backend, "table": label, "rows": f"{n:,}", "path": name,
            "rows/s": f"{rate:,.0f}", "batch p50 ms": ms(s.p50),
            "batch p95 ms": ms(s.pct(95)), "batch p99 ms": ms(s.pct(99)),
            "vs raw": f"{rate / raw_rate:.0%}",
        })
    share = mem_rate / raw_rate
    section.target(f"ingest {backend} ({label}): memstore >= 50% of raw throughput",
                   f"{share:.0%}", share >= 0.5)


def run(ctx: Context) -> Section:
    section = Section(f"1. Ingest: remember_many vs raw (batches of {BATCH:,})")
    if ctx.features["embeddings"]:
        section.note("Episodes carry precomputed 384-d embeddings: memstore gets them from a "
                     "lookup embedder (a dict from text to vector), the raw path writes the "
                     "same vectors, search_text and turn columns itself.")
    else:
        section.note("This memstore build has no embedding column: episodes are stored "
                     "without vectors on both paths.")
    section.note("Raw inputs (tuples) and memstore inputs (Episode objects) are built before "
                 "the timer starts; only the write call is timed. One transaction per batch "
                 "on both paths; batches alternate between the paths.")
    for backend in ctx.backends:
        if backend == "postgres" and ctx.features["embeddings"]:
            _variant(ctx, section, backend, "as migrated (HNSW)", ctx.args.ingest_rows_pg,
                     False)
            _variant(ctx, section, backend, "HNSW index dropped", ctx.args.ingest_rows, True)
        else:
            _variant(ctx, section, backend, "as migrated", ctx.args.ingest_rows, False)
    return section
