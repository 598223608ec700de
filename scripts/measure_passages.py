"""What scoring long episodes by their best passage costs: ingest and recall time.

Stores the LoCoMo dev conversations twice in one database, as one tenant each per
variant: with passages (``SentenceTransformerEmbedder()``, as it ships) and without
(``passage_tokens=None``: the whole-text vector only). Then asks every question of
categories 1-4 through ``store.recall`` of both variants, interleaved, and reports
ingest time and the p50/p90 recall latency of each and their ratio, at a granularity
of ``turn`` (short episodes: nearly none has passages), ``runs`` (1-16 turns, mixed)
or ``session`` (long episodes).

    python scripts/measure_passages.py --granularity runs
    python scripts/measure_passages.py --granularity session --url postgresql+asyncpg://…

Recall time includes embedding the query (the same for both). Absolute times drift
on a shared machine; read the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_locomo import DEFAULT_DATA, MAIN, episodes_of, load, tenant_of  # noqa: E402

from memstore import MemoryStore  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(url: str, data: list[dict[str, Any]], granularity: str, repeats: int) -> None:
    from memstore.embeddings import SentenceTransformerEmbedder

    await upgrade(url)
    variants = {
        "passages": SentenceTransformerEmbedder(),
        "whole only": SentenceTransformerEmbedder(passage_tokens=None),
    }
    stores: dict[str, MemoryStore] = {}
    ingest: dict[str, float] = {}
    questions: list[tuple[str, str]] = []
    async with contextlib.AsyncExitStack() as stack:
        for name, embedder in variants.items():
            store = await stack.enter_async_context(MemoryStore.open(url, embedder=embedder))
            stores[name] = store
            started = time.perf_counter()
            for index, sample in enumerate(data):
                tenant = f"{name}/{tenant_of(sample, index)}"
                await store.forget(user_id=tenant)
                episodes = episodes_of(sample["conversation"], tenant, granularity)
                for start in range(0, len(episodes), 500):
                    await store.remember_many(episodes[start : start + 500])
            ingest[name] = time.perf_counter() - started
        for index, sample in enumerate(data):
            questions += [
                (tenant_of(sample, index), qa["question"])
                for qa in sample["qa"]
                if qa.get("evidence") and str(qa.get("category")) in MAIN
            ]
        latency: dict[str, list[float]] = {name: [] for name in stores}
        for _ in range(repeats):
            for tenant, question in questions:
                for name, store in stores.items():
                    started = time.perf_counter()
                    await store.recall(question, user_id=f"{name}/{tenant}", limit=10)
                    latency[name].append((time.perf_counter() - started) * 1000)
    base = "whole only"
    print(
        f"granularity: {granularity}   backend: {url.split(':')[0]}   questions: {len(questions)}"
    )
    print(f"{'variant':<12}{'ingest s':>10}{'recall p50 ms':>15}{'p90 ms':>9}{'p50 ratio':>11}")
    for name, values in latency.items():
        p50 = statistics.median(values)
        ratio = p50 / statistics.median(latency[base])
        p90 = quantile(values, 0.9)
        print(f"{name:<12}{ingest[name]:>10.1f}{p50:>15.2f}{p90:>9.2f}{ratio:>11.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--granularity", choices=("turn", "runs", "session"), default="runs")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    data = load(args.data)
    with tempfile.TemporaryDirectory(prefix="memstore-passages-") as tmp:
        url = args.url or f"sqlite+aiosqlite:///{tmp}/passages.db"
        asyncio.run(run(url, data, args.granularity, args.repeats))


if __name__ == "__main__":
    main()
