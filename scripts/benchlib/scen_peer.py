"""Scenario 6: the same ingest and per-tenant semantic search through LangGraph's
``AsyncPostgresStore`` (pgvector HNSW, same vectors, same server) in the same run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .context import Context
from .data import Workload, episode_id, tenant_name
from .memapi import LookupEmbedder, open_store
from .paired import Paired, run_paired
from .recallrun import VECTOR_ONLY, K, Truth, dense_only_tuning, recall_at_k
from .rows import episode_text, episodes_of
from .stats import Samples, Section, ms, ratio

if TYPE_CHECKING:
    from langgraph.store.postgres.base import PostgresIndexConfig

__all__ = ["run"]

BATCH = 1_000
NAMESPACE = "memories"


async def _memstore_ingest(url: str, work: Workload) -> Samples:
    samples = Samples()
    embedder = LookupEmbedder()
    async with open_store(url, embedder) as store:
        for chunk in work.chunks(BATCH):
            episodes = episodes_of(work, chunk, embedder=embedder)
            start = time.perf_counter()
            await store.remember_many(episodes)
            samples.add(time.perf_counter() - start)
            embedder.known.clear()
    return samples


def _langgraph_index(embedder: LookupEmbedder) -> PostgresIndexConfig:
    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return [embedder.vector(t).tolist() for t in texts]

    return {
        "dims": 384,
        "embed": embed,
        "fields": ["text"],
        "distance_type": "cosine",
        "ann_index_config": {"kind": "hnsw"},
    }


async def _langgraph_ingest(dsn: str, work: Workload) -> Samples:
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import AsyncPostgresStore

    samples = Samples()
    embedder = LookupEmbedder()
    async with AsyncPostgresStore.from_conn_string(dsn, index=_langgraph_index(embedder)) as lg:
        await lg.setup()
        for chunk in work.chunks(BATCH):
            ops = []
            for i in range(len(chunk)):
                text = episode_text(chunk.inputs[i], chunk.outputs[i])
                embedder.register(text, chunk.vectors[i])
                ops.append(
                    PutOp(
                        namespace=(NAMESPACE, tenant_name(int(chunk.tenants[i]))),
                        key=episode_id(work.seed, chunk.start + i),
                        value={
                            "text": text,
                            "input": chunk.inputs[i],
                            "output": chunk.outputs[i],
                            "occurred_at": chunk.occurred[i].isoformat(),
                        },
                    )
                )
            start = time.perf_counter()
            await lg.abatch(ops)
            samples.add(time.perf_counter() - start)
            embedder.known.clear()
    return samples


async def _search(mem_url: str, lg_dsn: str, queries: list[tuple[str, str, np.ndarray]]) -> Any:
    from langgraph.store.postgres import AsyncPostgresStore

    embedder = LookupEmbedder()
    for _, text, vec in queries:
        embedder.register(text, vec)
    tuning = dense_only_tuning()
    async with (
        open_store(mem_url, embedder) as hybrid,
        open_store(mem_url, embedder, recall_tuning=tuning) as dense,
        AsyncPostgresStore.from_conn_string(lg_dsn, index=_langgraph_index(embedder)) as lg,
    ):

        async def vector_only(q: tuple[str, str, np.ndarray]) -> list[Any]:
            embedder.known[VECTOR_ONLY] = q[2]
            found: list[Any] = await dense.recall(VECTOR_ONLY, user_id=q[0], limit=K)
            return found

        return await run_paired(
            queries,
            {
                "memstore recall (hybrid)": lambda q: hybrid.recall(q[1], user_id=q[0], limit=K),
                "memstore vector-only": vector_only,
                "LangGraph PostgresStore.asearch": lambda q: lg.asearch(
                    (NAMESPACE, q[0]), query=q[1], limit=K
                ),
            },
        )


def _ids(result: Any) -> list[str]:
    return [getattr(r, "key", None) or r.id for r in result]


def run(ctx: Context) -> Section:
    n, tenants = ctx.args.peer_rows, ctx.args.peer_tenants
    section = Section(
        f"6. Peer: memstore vs LangGraph PostgresStore ({n:,} episodes, "
        f"{tenants:,} tenants, same Postgres server)"
    )
    if not ctx.features["embeddings"]:
        section.note("Skipped: this memstore build has no embeddings to compare.")
        return section
    try:
        import langgraph.store.postgres  # noqa: F401
    except ImportError:
        section.note(
            "Skipped: langgraph-checkpoint-postgres is not installed (pip install -e '.[bench]')."
        )
        return section
    from importlib.metadata import version

    import langgraph.store.postgres as lgp

    section.note(
        f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}, "
        f"psycopg {version('psycopg')}; LangGraph index: HNSW (pgvector defaults, as "
        "memstore's), cosine, one vector per item (field `text` = input + output); "
        "namespace (memories, tenant). Both stores get the same precomputed vectors "
        f"from a lookup embedder. Module: {lgp.__name__}."
    )
    work = Workload(n, tenants, seed=31)
    mem = ctx.fresh("postgres", "peer_memstore")
    lg_dsn = ctx.dbs.pg_dsn("peer_langgraph")
    ctx.log(f"  peer: memstore ingest {n:,}")
    mem_s = asyncio.run(_memstore_ingest(mem.url, work))
    ctx.log(f"  peer: LangGraph ingest {n:,}")
    lg_s = asyncio.run(_langgraph_ingest(lg_dsn, work))
    mem_rate, lg_rate = n / mem_s.total, n / lg_s.total
    for name, s, rate in (
        ("memstore remember_many", mem_s, mem_rate),
        ("LangGraph abatch(PutOp)", lg_s, lg_rate),
    ):
        section.add(
            **{
                "operation": "ingest, batches of 1,000",
                "path": name,
                "rows/s": f"{rate:,.0f}",
                "p50 ms": ms(s.p50),
                "p95 ms": ms(s.pct(95)),
                "p99 ms": ms(s.pct(99)),
                "vs LangGraph": ratio(rate, lg_rate),
            }
        )
    section.target(
        "peer ingest: memstore throughput ahead of LangGraph",
        f"{mem_rate / lg_rate:.2f}x LangGraph",
        mem_rate > lg_rate,
    )

    truth = Truth()
    rng = np.random.default_rng(9)
    picked = [0, *sorted({int(t) for t in rng.integers(1, max(2, tenants), size=9)})]
    watched = {tenant_name(t) for t in picked}
    for chunk in work.chunks(10_000):
        for i in range(len(chunk)):
            user = tenant_name(int(chunk.tenants[i]))
            if user in watched:
                truth.add(user, episode_id(work.seed, chunk.start + i), chunk.vectors[i])
    queries = []
    for j in range(ctx.args.queries):
        t = picked[j % len(picked)]
        ((text, vec),) = work.queries(t, 1, salt=500 + j)
        queries.append((tenant_name(t), text, vec))
    ctx.log(f"  peer: {len(queries)} searches per path")
    paired = asyncio.run(_search(mem.url, lg_dsn, queries))
    base = "LangGraph PostgresStore.asearch"
    for name, s in paired.samples.items():
        results = [_ids(r) for r in paired.results[name]]
        rec = np.mean(
            [recall_at_k(r, truth.top(q[0], q[2])) for r, q in zip(results, queries, strict=True)]
        )
        counts = [len(r) for r in results]
        section.add(
            **{
                "operation": "per-tenant search, top-10",
                "path": name,
                "p50 ms": ms(s.p50),
                "p95 ms": ms(s.pct(95)),
                "p99 ms": ms(s.pct(99)),
                "vs LangGraph": ratio(s.p50, paired.samples[base].p50) + " (p50)",
                "rows min/mean": f"{min(counts)}/{np.mean(counts):.1f}",
                "recall@10 vs exact": f"{rec:.3f}" if "hybrid" not in name else "",
            }
        )
    _peer_targets(section, paired, base, len(queries))
    section.note(
        "Tenants searched: the 1% tenant and up to 9 others, queries alternate among "
        "them; recall@10 is against brute-force top-10 over the tenant's vectors."
    )
    return section


def _peer_targets(section: Section, paired: Paired, base: str, n: int) -> None:
    """memstore p50 <= LangGraph's over the queries where LangGraph returned k rows."""
    full = [i for i, r in enumerate(paired.results[base]) if len(r) >= K]
    for name in ("memstore vector-only", "memstore recall (hybrid)"):
        if not full:
            break
        mine = float(np.median([paired.samples[name].values[i] for i in full]))
        theirs = float(np.median([paired.samples[base].values[i] for i in full]))
        section.target(
            f"peer search: {name} p50 <= LangGraph's where LangGraph returns k={K} rows "
            f"({len(full)}/{n} queries)",
            f"{mine / theirs:.2f}x LangGraph",
            mine <= theirs,
        )
    short = [i for i in range(n) if i not in set(full)]
    mem_rows = [len(paired.results["memstore vector-only"][i]) for i in short]
    section.target(
        f"peer search: queries where LangGraph returned fewer than k={K} rows",
        f"{len(short)}/{n}"
        + (f" (memstore vector-only: min {min(mem_rows)} rows)" if short else ""),
        None,
    )
