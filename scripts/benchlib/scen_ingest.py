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
from .raw import pg_connect, pg_copy, pg_insert_many, sqlite_connect, sqlite_insert
from .rows import Turns, episodes_of, raw_records, row_values
from .stats import Samples, Section, ms

__all__ = ["run"]

BATCH = 1_000


def _dialect(backend: str) -> Any:
    from sqlalchemy.dialects import postgresql, sqlite

    # SQLAlchemy leaves PGDialect.__init__ unannotated.
    return sqlite.dialect() if backend == "sqlite" else postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]


async def _alternate(
    mem: Target, raw: Target, work: Workload, insert: Target | None
) -> dict[str, Samples]:
    from sqlalchemy import Table

    from memstore.models import EpisodeRow
    from memstore.types import utcnow

    backend = mem.backend
    table = EpisodeRow.__table__
    assert isinstance(table, Table)  # typed as any FromClause; a declarative table here
    dialect = _dialect(backend)
    samples = {"mem": Samples(), "raw": Samples(), "insert": Samples()}
    turns = Turns()
    embedder = LookupEmbedder()
    # A sqlite3.Connection, or an asyncpg connection (untyped) on Postgres.
    conn: Any = sqlite_connect(raw.raw) if backend == "sqlite" else await pg_connect(raw.raw)
    ins = await pg_connect(insert.raw) if insert is not None else None
    paths = ["mem", "raw"] + (["insert"] if ins is not None else [])
    try:
        async with open_store(mem.url, embedder) as store:
            for n, chunk in enumerate(work.chunks(BATCH)):
                embedder.known.clear()
                episodes = episodes_of(work, chunk, embedder=embedder)
                now = utcnow()
                values = [row_values(work, chunk, i, now, turns) for i in range(len(chunk))]
                names, records = raw_records(table, dialect, values)

                # Rotate which path goes first, so none always runs on a cold cache.
                order = paths[n % len(paths) :] + paths[: n % len(paths)]
                for path in order:
                    start = time.perf_counter()
                    if path == "mem":
                        await store.remember_many(episodes)
                    elif path == "insert":
                        await pg_insert_many(ins, table.name, names, records)
                    elif backend == "sqlite":
                        sqlite_insert(conn, table.name, names, records)
                    else:
                        await pg_copy(conn, table.name, names, records)
                    samples[path].add(time.perf_counter() - start)
    finally:
        if backend == "sqlite":
            conn.close()
        else:
            await conn.close()
        if ins is not None:
            await ins.close()
    return samples


def _variant(
    ctx: Context,
    section: Section,
    backend: str,
    label: str,
    n: int,
    drop_index: bool,
    tenants: int | None = None,
) -> None:
    tenants = tenants or ctx.args.ingest_tenants
    label = f"{label}, {tenants} tenant{'s' if tenants > 1 else ''}"
    work = Workload(n, tenants, seed=11)
    raw_name = "asyncpg COPY" if backend == "postgres" else "sqlite3 executemany"
    mem_t, raw_t = ctx.fresh(backend, "ingest_mem"), ctx.fresh(backend, "ingest_raw")
    ins_t = ctx.fresh(backend, "ingest_insert") if backend == "postgres" else None
    if drop_index:
        for t in (mem_t, raw_t, ins_t):
            if t is not None:
                asyncio.run(drop_hnsw(t))
    ctx.log(f"  ingest {backend} {label}: {n:,} rows per path")
    got = asyncio.run(_alternate(mem_t, raw_t, work, ins_t))
    mem, raw = got["mem"], got["raw"]
    mem_rate, raw_rate = n / mem.total, n / raw.total
    shown = [("memstore remember_many", mem), (raw_name, raw)]
    if ins_t is not None:
        shown.append(("asyncpg executemany INSERT (info)", got["insert"]))
    for name, s in shown:
        rate = n / s.total
        section.add(
            **{
                "backend": backend,
                "table": label,
                "rows": f"{n:,}",
                "path": name,
                "rows/s": f"{rate:,.0f}",
                "batch p50 ms": ms(s.p50),
                "batch p95 ms": ms(s.pct(95)),
                "batch p99 ms": ms(s.pct(99)),
                "vs raw": f"{rate / raw_rate:.0%}",
            }
        )
    share = mem_rate / raw_rate
    section.target(
        f"ingest {backend} ({label}): memstore >= 50% of raw throughput",
        f"{share:.0%}",
        share >= 0.5,
    )


def run(ctx: Context) -> Section:
    section = Section(f"1. Ingest: remember_many vs raw (batches of {BATCH:,})")
    if ctx.features["embeddings"]:
        section.note(
            "Episodes carry precomputed 384-d embeddings: memstore gets them from a "
            "lookup embedder (a dict from text to vector), the raw path writes the "
            "same vectors, search_text and turn columns itself."
        )
    else:
        section.note(
            "This memstore build has no embedding column: episodes are stored "
            "without vectors on both paths."
        )
    section.note(
        "Raw inputs (tuples) and memstore inputs (Episode objects) are built before "
        "the timer starts; only the write call is timed. One transaction per batch "
        "on every path; each batch is written by every path in rotating order. On "
        "Postgres a prepared INSERT per row (asyncpg executemany) is shown too: it is "
        "what an ORM-level bulk insert amounts to, next to COPY."
    )
    section.note(
        "Batches mix tenants (each row's tenant drawn at random) unless the table "
        "says 1 tenant; memstore groups a batch by tenant, so mixed batches cost it "
        "more statements than single-tenant ones."
    )
    for backend in ctx.backends:
        if backend == "postgres" and ctx.features["embeddings"]:
            _variant(ctx, section, backend, "as migrated (HNSW)", ctx.args.ingest_rows_pg, False)
            _variant(ctx, section, backend, "HNSW index dropped", ctx.args.ingest_rows, True)
            _variant(
                ctx, section, backend, "HNSW index dropped", ctx.args.ingest_rows, True, tenants=1
            )
        else:
            _variant(ctx, section, backend, "as migrated", ctx.args.ingest_rows, False)
            _variant(ctx, section, backend, "as migrated", ctx.args.ingest_rows, False, tenants=1)
    return section
