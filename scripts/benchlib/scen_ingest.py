"""Scenario 1: remember_many in batches of 1,000 vs the fastest raw path, same table."""

from __future__ import annotations

import asyncio
import time

from .context import Context
from .data import Workload
from .memapi import open_store
from .raw import pg_connect, pg_copy, sqlite_connect, sqlite_insert
from .rows import episodes_of, raw_records, row_values
from .stats import Samples, Section, ms

__all__ = ["run"]

BATCH = 1_000


def _batches(work: Workload):
    for chunk in work.chunks(BATCH):
        yield chunk


async def _memstore(url: str, work: Workload) -> Samples:
    samples = Samples()
    async with open_store(url) as store:
        for chunk in _batches(work):
            episodes = episodes_of(work, chunk)
            start = time.perf_counter()
            await store.remember_many(episodes)
            samples.add(time.perf_counter() - start)
    return samples


async def _raw(backend: str, raw: str, work: Workload) -> Samples:
    from memstore.models import EpisodeRow
    from sqlalchemy.dialects import postgresql, sqlite

    table = EpisodeRow.__table__
    dialect = sqlite.dialect() if backend == "sqlite" else postgresql.asyncpg.dialect()
    samples = Samples()
    conn = sqlite_connect(raw) if backend == "sqlite" else await pg_connect(raw)
    try:
        now = work_now()
        for chunk in _batches(work):
            names, records = raw_records(
                table, dialect, [row_values(work, chunk, i, now) for i in range(len(chunk))])
            start = time.perf_counter()
            if backend == "sqlite":
                sqlite_insert(conn, table.name, names, records)
            else:
                await pg_copy(conn, table.name, names, records)
            samples.add(time.perf_counter() - start)
    finally:
        if backend == "sqlite":
            conn.close()
        else:
            await conn.close()
    return samples


def work_now():
    from memstore.types import utcnow

    return utcnow()


def run(ctx: Context) -> Section:
    n = ctx.args.ingest_rows
    section = Section(f"1. Ingest: remember_many vs raw ({n:,} episodes, batches of {BATCH:,})")
    work = Workload(n, ctx.args.ingest_tenants, seed=11)
    embedded = ctx.features["embeddings"]
    section.note("Episodes carry precomputed 384-d embeddings." if embedded else
                 "Episodes WITHOUT embeddings: this memstore build has no embedding column yet.")
    for backend in ctx.backends:
        raw_name = "asyncpg COPY" if backend == "postgres" else "sqlite3 executemany"
        results = {}
        # Fresh database per path; raw first then memstore, then once more reversed
        # would double the cost, so the order is fixed and stated.
        for path in ("memstore", "raw"):
            target = ctx.fresh(backend, f"ingest_{path}")
            ctx.log(f"  ingest {backend} {path} ...")
            if path == "memstore":
                results[path] = asyncio.run(_memstore(target.url, work))
            else:
                results[path] = asyncio.run(_raw(backend, target.raw, work))
        mem, raw = results["memstore"], results["raw"]
        mem_rate, raw_rate = n / mem.total, n / raw.total
        for label, s, rate in (("memstore remember_many", mem, mem_rate),
                               (raw_name, raw, raw_rate)):
            section.add(**{
                "backend": backend, "path": label, "rows/s": f"{rate:,.0f}",
                "batch p50 ms": ms(s.p50), "batch p95 ms": ms(s.pct(95)),
                "batch p99 ms": ms(s.pct(99)),
                "vs raw": f"{rate / raw_rate:.0%}",
            })
        share = mem_rate / raw_rate
        section.target(f"ingest {backend}: memstore >= 50% of raw throughput",
                       f"{share:.0%}", share >= 0.5)
    return section
