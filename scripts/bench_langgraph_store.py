"""Latency of the LangGraph store's exact per-tenant search, on SQLite and Postgres.

Puts ``--items`` indexed items (hashing embedder, 384-d) into one tenant under
``("bench", "docs")`` plus 10 items under ``("bench", "small")``, then times
``--queries`` semantic searches of each prefix, a filter-only search and a plain
page (no query, no filter: the only kind paged in SQL).

    python scripts/bench_langgraph_store.py --items 1000 5000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# benchlib as scripts/bench.py imports it (one module name for mypy, too).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.servers import Databases, sqlalchemy_url
from langgraph.store.base import PutOp

from memstore.integrations.langgraph import MemstoreStore
from memstore.schema.migrate import upgrade

WORDS = "tea coffee bicycle river paris garden music winter python lamp cloud stone".split()


def text(n: int) -> str:
    return " ".join(WORDS[(n * k) % len(WORDS)] for k in (1, 3, 7, 11)) + f" note {n}"


async def run(url: str, items: int, queries: int) -> dict[str, float]:
    await upgrade(url)
    index = {"dims": 384, "fields": ["text"]}
    async with MemstoreStore.from_url(url, index=index) as store:  # type: ignore[arg-type]
        start = time.perf_counter()
        for first in range(0, items, 500):
            await store.abatch(
                [
                    PutOp(("u1", "bench", "docs"), f"d{n}", {"text": text(n), "n": n})
                    for n in range(first, min(items, first + 500))
                ]
            )
        put_s = time.perf_counter() - start
        for n in range(10):
            await store.aput(("u1", "bench", "small"), f"s{n}", {"text": text(n), "n": n})

        async def timed(prefix: tuple[str, ...], **kw: object) -> float:
            laps = []
            for q in range(queries):
                t = time.perf_counter()
                found = await store.asearch(prefix, limit=10, **kw)  # type: ignore[arg-type]
                laps.append(time.perf_counter() - t)
                assert found, "a search found nothing"
                kw = {k: (text(q) if k == "query" else v) for k, v in kw.items()}
            return statistics.median(laps) * 1000

        return {
            "put_per_item_ms": put_s / items * 1000,
            "search_big_ms": await timed(("u1", "bench", "docs"), query="tea river"),
            "search_small_ms": await timed(("u1", "bench", "small"), query="tea river"),
            "filter_big_ms": await timed(("u1", "bench", "docs"), filter={"n": {"$lt": 50}}),
            "page_big_ms": await timed(("u1", "bench", "docs")),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"])
    args = parser.parse_args()
    dbs = Databases()
    try:
        for backend in args.backends:
            for items in args.items:
                url = (
                    dbs.sqlite_url("lg")
                    if backend == "sqlite"
                    else sqlalchemy_url(dbs.pg_dsn("lg"))
                )
                got = asyncio.run(run(url, items, args.queries))
                figures = "  ".join(f"{k}={v:.2f}" for k, v in got.items())
                print(f"{backend:8} items={items:6}  {figures}", flush=True)
    finally:
        dbs.close()


if __name__ == "__main__":
    main()
