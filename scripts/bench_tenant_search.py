"""Per-tenant vector search on Postgres: shared HNSW + tenant filter vs memstore's plan.

Loads ``--rows`` synthetic 384-d embeddings (low intrinsic dimension, like text
embeddings) into a freshly migrated database: one tenant with ``--big-share`` of the
rows, one with 1 %, the rest spread over small tenants. For each tenant it reports
recall@k against exact search of

* ``naive``: the shared HNSW index ordered by distance, filtered by ``user_id`` afterwards
  (what ``WHERE user_id = … ORDER BY embedding <=> q LIMIT k`` gets when the planner
  picks the index), and
* ``memstore``: ``PostgresSearch.dense`` (the plan recall uses), with the plan it chose.

    python scripts/bench_tenant_search.py --url postgresql+asyncpg://…/empty_db
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.db.engine import create_engine
from memstore.db.unit import Database
from memstore.models import EpisodeRow
from memstore.schema.migrate import upgrade
from memstore.search.backends import backend_for

DIM = 384


def vectors(n: int, seed: int) -> np.ndarray:
    basis = np.random.default_rng(0).normal(size=(32, DIM))  # shared by rows and queries
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 32)) @ basis + 0.2 * rng.normal(size=(n, DIM))
    unit: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return unit


async def main(args: argparse.Namespace) -> None:
    await upgrade(args.url)
    n = args.rows
    n_big, n_small = int(n * args.big_share), n // 100
    owner = ["big"] * n_big + ["small"] * n_small
    owner += [f"t{i % 40}" for i in range(n - len(owner))]
    data = vectors(n, seed=3)
    queries = vectors(args.queries, seed=4)
    # The dense search itself, as the store builds it, on an engine of the script's own.
    engine = create_engine(args.url)
    db = Database(engine)
    options = {} if args.threshold is None else {"exact_threshold": args.threshold}
    search: Any = backend_for(engine, **options)
    try:
        build = 0.0
        reuse = args.reuse and await _scalar(engine, "SELECT count(*) FROM episodes") == n
        async with engine.begin() as conn:
            if not reuse:
                await _load(conn, owner, data, n)
                started = time.perf_counter()
                await conn.execute(text("SET maintenance_work_mem = '256MB'"))
                await conn.execute(
                    text(
                        "CREATE INDEX ix_episodes_embedding_hnsw ON episodes "
                        "USING hnsw (embedding vector_cosine_ops)"
                    )
                )
                await conn.execute(text("ANALYZE episodes"))
                build = time.perf_counter() - started
        version = await _scalar(
            engine, "SELECT extversion FROM pg_extension WHERE extname='vector'"
        )
        print(
            f"rows={n} dim={DIM} pgvector={version} hnsw build={build:.0f}s "
            f"k={args.k} queries={args.queries}"
        )
        print(
            f"{'tenant':<8}{'rows':>7}{'share':>7}{'naive R@k':>11}{'naive rows':>11}"
            f"{'memstore R@k':>14}{'plan':>24}{'ms/query':>10}"
        )
        for tenant in ("small", "t0", "big"):
            rows = [i for i in range(n) if owner[i] == tenant]
            naive_recall, naive_rows, ours, plans, spent = [], [], [], set(), 0.0
            for q in queries:
                truth = {f"e{rows[j]}" for j in np.argsort(-(data[rows] @ q))[: args.k]}
                async with engine.begin() as conn:
                    got = [
                        r[0]
                        for r in (
                            await conn.execute(
                                text(
                                    "SELECT id FROM (SELECT id, user_id FROM episodes "
                                    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 40) nearest "
                                    "WHERE user_id = :u LIMIT :k"
                                ),
                                {"q": q, "u": tenant, "k": args.k},
                            )
                        )
                    ]
                naive_rows.append(len(got))
                naive_recall.append(len(truth & set(got)) / args.k)
                started = time.perf_counter()
                async with db.read() as session:
                    found = await search.dense(session, EpisodeRow, tenant, q, args.k, [])
                spent += time.perf_counter() - started
                plans.add(search.last_plan)
                ours.append(len(truth & set(found)) / args.k)
            print(
                f"{tenant:<8}{len(rows):>7}{len(rows) / n:>7.1%}{np.mean(naive_recall):>11.3f}"
                f"{np.mean(naive_rows):>11.1f}{np.mean(ours):>14.3f}"
                f"{','.join(sorted(plans)):>24}{1000 * spent / len(queries):>10.1f}"
            )
        async with engine.begin() as conn:
            plan = await conn.execute(
                text(
                    "EXPLAIN SELECT id FROM episodes WHERE embedding IS NOT NULL "
                    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 100"
                ),
                {"q": queries[0]},
            )
            print("over-fetch subquery plan:", " / ".join(r[0].strip() for r in plan)[:200])
    finally:
        await engine.dispose()


async def _load(conn: Any, owner: list[str], data: np.ndarray, n: int) -> None:
    await conn.execute(text("TRUNCATE episodes"))
    await conn.execute(text("DROP INDEX IF EXISTS ix_episodes_embedding_hnsw"))
    raw = await conn.get_raw_connection()
    records = [(owner[i], f"e{i}", "s", "", "", "[]", "{}", data[i]) for i in range(n)]
    await raw.driver_connection.executemany(
        "INSERT INTO episodes (user_id, id, session_id, input, output, tool_calls, "
        "metadata, occurred_at, created_at, embedding) "
        "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, now(), now(), $8)",
        records,
    )


async def _scalar(engine: AsyncEngine, sql: str) -> object:
    async with engine.connect() as conn:
        return await conn.scalar(text(sql))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--big-share", type=float, default=0.6)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--threshold", type=int, default=None, help="exact-scan threshold (default: memstore's)"
    )
    parser.add_argument("--reuse", action="store_true", help="keep already loaded rows")
    asyncio.run(main(parser.parse_args()))
