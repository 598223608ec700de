"""Scenario 3: one large tenant on Postgres, where the HNSW index matters.

(a) episodes: the tenant is the whole table, so memstore's per-tenant plan may
use HNSW (over-fetch on pgvector < 0.8, iterative scan on >= 0.8);
(b) facts: recall_facts over the tenant's facts (memstore scans facts exactly,
as they are always filtered by valid and transaction time).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import numpy as np

from .context import Context, Target
from .data import Workload
from .loader import load_episodes
from .memapi import LookupEmbedder, open_store
from .paired import run_paired
from .raw import pg_connect, pg_copy
from .recallrun import (
    VECTOR_ONLY,
    K,
    Truth,
    dense_only_tuning,
    hnsw_path,
    measure_recall,
    recall_at_k,
)
from .rows import raw_records
from .stats import Section, ms, ratio

__all__ = ["run"]

USER = "solo"
FACTS_EXACT = """SELECT * FROM facts WHERE user_id = $1 AND valid_from <= $3
  AND (valid_to IS NULL OR valid_to > $3) AND recorded_at <= $3
  AND (superseded_at IS NULL OR superseded_at > $3)
  ORDER BY (embedding <=> $2) + 0 LIMIT $4"""


def _episodes(ctx: Context, section: Section, n: int) -> None:
    work = Workload(n, 1, seed=51)
    truth = Truth()
    target = ctx.fresh("postgres", "large_ep")
    ctx.log(f"  large: loading {n:,} episodes of one tenant")
    start = time.perf_counter()
    report = asyncio.run(
        load_episodes(
            target,
            work,
            tenant=USER,
            log=ctx.log,
            collect=lambda user, row, vec, chunk, i: truth.add(
                user, f"ep-{work.seed:03d}-{row:012d}", vec
            ),
        )
    )
    section.note(f"episodes: {report.describe()} (total {time.perf_counter() - start:.0f} s).")
    queries = [(USER, t, v) for t, v in work.queries(0, ctx.args.large_queries, salt=3)]
    # memstore over-fetches 2 x depth(200) = 400 through HNSW on pgvector < 0.8; the
    # hand-written HNSW query gets the same ef_search so the two plans are alike.
    ef = 400
    results = asyncio.run(
        measure_recall(
            target,
            {"single tenant": queries},
            truth,
            section,
            label=f"episodes {n:,}/1",
            embeddings=True,
            hnsw_ef=ef,
        )
    )
    paired = results["single tenant"]
    if "memstore vector-only" in paired.samples:
        s, b = paired.samples["memstore vector-only"], paired.samples[hnsw_path(ef)]
        section.target(
            f"large tenant episodes ({n:,}), memstore vector-only p50 vs "
            f"hand-written HNSW query (ef_search={ef})",
            ratio(s.p50, b.p50),
            None,
        )
    for name in ("memstore vector-only",):
        if name in paired.samples:
            found = [[getattr(r, "id", r) for r in res] for res in paired.results[name]]
            rec = np.mean(
                [recall_at_k(f, truth.top(q[0], q[2])) for f, q in zip(found, queries, strict=True)]
            )
            section.target(
                f"large tenant episodes ({n:,}), {name}: recall@10 >= 0.95",
                f"{rec:.3f}",
                bool(rec >= 0.95),
            )
            s = paired.samples[name]
            section.target(
                f"large tenant episodes ({n:,}), {name}: p50 / p99",
                f"{ms(s.p50)} / {ms(s.pct(99))} ms",
                None,
            )


async def _load_facts(target: Target, work: Workload) -> float:
    from sqlalchemy import Table
    from sqlalchemy.dialects import postgresql

    from memstore.models import FactRow
    from memstore.models.facts import subject_key

    table = FactRow.__table__
    assert isinstance(table, Table)  # typed as any FromClause; a declarative table here
    # SQLAlchemy leaves PGDialect.__init__ unannotated.
    dialect = postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]
    conn = await pg_connect(target.raw)
    start = time.perf_counter()
    try:
        for chunk in work.chunks(10_000):
            values = []
            for i in range(len(chunk)):
                row = chunk.start + i
                words = chunk.inputs[i].split()
                values.append(
                    {
                        "user_id": USER,
                        "id": f"fa-{row:010d}",
                        "fact_id": f"fa-{row:010d}",
                        "subject": USER,
                        "subject_key": subject_key(USER),
                        "predicate": f"mentioned_{words[0]}",
                        "object": chunk.inputs[i],
                        "single_valued": False,
                        "confidence": 0.9,
                        "sources": [],
                        "valid_from": chunk.occurred[i],
                        "valid_to": None,
                        "recorded_at": chunk.occurred[i] + timedelta(hours=1),
                        "superseded_at": None,
                        "embedding": chunk.vectors[i],
                    }
                )
            names, records = raw_records(table, dialect, values)
            await pg_copy(conn, table.name, names, records)
        await conn.execute("ANALYZE facts")
    finally:
        await conn.close()
    return time.perf_counter() - start


async def _facts_queries(
    target: Target,
    work: Workload,
    queries: list[Any],
    truth: Truth,
) -> Any:
    from memstore.types import utcnow

    embedder = LookupEmbedder()
    for _, text, vec in queries:
        embedder.register(text, vec)
    conn = await pg_connect(target.raw)
    tuning = dense_only_tuning()
    try:
        async with (
            open_store(target.url, embedder) as hybrid,
            open_store(target.url, embedder, recall_tuning=tuning) as dense,
        ):

            async def vector_only(q: Any) -> list[Any]:
                embedder.known[VECTOR_ONLY] = q[2]
                found: list[Any] = await dense.recall_facts(VECTOR_ONLY, user_id=USER, limit=K)
                return found

            async def raw_exact(q: Any) -> list[Any]:
                return list(await conn.fetch(FACTS_EXACT, USER, q[2], utcnow(), K))

            return await run_paired(
                queries,
                {
                    "memstore recall_facts (hybrid)": lambda q: hybrid.recall_facts(
                        q[1], user_id=USER, limit=K
                    ),
                    "memstore recall_facts vector-only": vector_only,
                    "raw SQL as-of + exact vector order": raw_exact,
                },
            )
    finally:
        await conn.close()


def _facts(ctx: Context, section: Section, n: int) -> None:
    work = Workload(n, 1, seed=52)
    target = ctx.fresh("postgres", "large_facts")
    ctx.log(f"  large: loading {n:,} facts of one tenant")
    seconds = asyncio.run(_load_facts(target, work))
    section.note(
        f"facts: {n:,} rows written by COPY in {seconds:.0f} s; the facts table has "
        "no vector index in memstore's schema (facts are scanned exactly)."
    )
    truth = Truth()
    for chunk in work.chunks(10_000):
        for i in range(len(chunk)):
            truth.add(USER, f"fa-{chunk.start + i:010d}", chunk.vectors[i])
    queries = [(USER, t, v) for t, v in work.queries(0, ctx.args.large_queries, salt=4)]
    paired = asyncio.run(_facts_queries(target, work, queries, truth))
    base = "raw SQL as-of + exact vector order"
    for name, s in paired.samples.items():
        found = [[getattr(r, "id", None) or r["id"] for r in res] for res in paired.results[name]]
        rec = np.mean(
            [recall_at_k(f, truth.top(USER, q[2])) for f, q in zip(found, queries, strict=True)]
        )
        section.add(
            store=f"facts {n:,}/1",
            tenant="single tenant",
            path=name,
            **{
                "p50 ms": ms(s.p50),
                "p95 ms": ms(s.pct(95)),
                "p99 ms": ms(s.pct(99)),
                "p50 vs raw": ratio(s.p50, paired.samples[base].p50),
                "p99 vs raw": ratio(s.pct(99), paired.samples[base].pct(99)),
                "rows min/mean": f"{min(len(f) for f in found)}/"
                f"{np.mean([len(f) for f in found]):.1f}",
                "recall@10 vs exact": f"{rec:.3f}" if "hybrid" not in name else "",
            },
        )
        if name == "memstore recall_facts vector-only":
            section.target(
                f"large tenant facts ({n:,}), vector-only recall@10 >= 0.95",
                f"{rec:.3f}",
                bool(rec >= 0.95),
            )
            section.target(
                f"large tenant facts ({n:,}), vector-only p50 / p99",
                f"{ms(s.p50)} / {ms(s.pct(99))} ms",
                None,
            )


def run(ctx: Context) -> Section:
    n = ctx.args.large_facts
    section = Section(f"3. Large single tenant on Postgres ({n:,} episodes; {n:,} facts)")
    if "postgres" not in ctx.backends or not ctx.features["embeddings"]:
        section.note("Skipped: needs Postgres and a memstore build with embeddings.")
        return section
    _episodes(ctx, section, n)
    _facts(ctx, section, n)
    return section
