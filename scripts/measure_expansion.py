"""Keyword expansion by word vectors, through ``store.recall``: recall@10 and latency, off vs on.

One ingestion of the LoCoMo dev set, then two stores on the same database, one
with ``RecallTuning()`` and one with ``RecallTuning(expansion=N)``. Every
question is asked of both, in alternating order, and each recall is timed, so
the two latencies share the machine's load. The first recall of each tenant in
each store is a warm-up (for the expanding store it embeds the tenant's
vocabulary) and is timed separately.

    python scripts/measure_expansion.py                     # temp SQLite, MiniLM
    python scripts/measure_expansion.py --postgres         # a private pgserver
    python scripts/measure_expansion.py --expansion 20 --cosine 0.4 --weight 0.3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_locomo import (  # noqa: E402
    DEFAULT_DATA,
    HALVES,
    KS,
    Results,
    _recall_at,
    ingest,
    load,
    make_embedder,
    mean_recall,
    norm_id,
    tenant_of,
)

from memstore import MemoryStore  # noqa: E402
from memstore.recall import RecallTuning  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402


async def run(args: argparse.Namespace) -> None:
    data = load(args.data)
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/expansion.db"
    await upgrade(url)
    embedder = make_embedder("minilm", None)
    on = RecallTuning(
        expansion=args.expansion, expansion_cosine=args.cosine, expansion_weight=args.weight
    )
    async with MemoryStore.open(url, embedder=embedder) as store:
        backend = store.engine.dialect.name
        await ingest(store, data)
    results: dict[str, Results] = {"off": defaultdict(list), "on": defaultdict(list)}
    times: dict[str, list[float]] = {"off": [], "on": []}
    warm: dict[str, list[float]] = {"off": [], "on": []}
    async with (
        MemoryStore.open(url, embedder=embedder) as off_store,
        MemoryStore.open(url, embedder=embedder, recall_tuning=on) as on_store,
    ):
        stores = {"off": off_store, "on": on_store}
        for index, sample in enumerate(data):
            tenant = tenant_of(sample, index)
            for name, store in stores.items():
                t = time.perf_counter()
                await store.recall("warm up", user_id=tenant, limit=max(KS))
                warm[name].append(time.perf_counter() - t)
            asked = 0
            for qa in sample["qa"]:
                evidence = {e for e in map(norm_id, qa.get("evidence") or []) if e}
                if not evidence:
                    continue
                order = ("off", "on") if asked % 2 == 0 else ("on", "off")
                asked += 1
                for name in order:
                    t = time.perf_counter()
                    found = await stores[name].recall(qa["question"], user_id=tenant, limit=max(KS))
                    times[name].append(time.perf_counter() - t)
                    ranked = [e.metadata.get("dia_id") for e in found]
                    key = (tenant, str(qa.get("category")))
                    results[name][key].append(_recall_at(evidence, ranked))
    print(
        f"backend: {backend}   expansion: best {args.expansion}, cosine >= {args.cosine}, "
        f"weight {args.weight} x cosine   data: {args.data}"
    )
    groups = [*HALVES.items(), ("all", None)]
    print(
        f"{'recall@10 (1-4)':<18}"
        + "".join(f"{g:>10}" for g, _ in groups)
        + f"{'multi-hop all':>15}"
    )
    for name in ("off", "on"):
        cells = "".join(f"{mean_recall(results[name], conversations=c):>10.3f}" for _, c in groups)
        mh = mean_recall(results[name], categories=("1",))
        print(f"{name:<18}{cells}{mh:>15.3f}")
    for name in ("off", "on"):
        ms = sorted(t * 1000 for t in times[name])
        p90 = ms[int(0.9 * len(ms))]
        print(
            f"latency {name:<4} n={len(ms)}  p50 {statistics.median(ms):.1f} ms  "
            f"p90 {p90:.1f} ms  mean {statistics.fmean(ms):.1f} ms   "
            f"first recall per tenant: {', '.join(f'{w:.2f}s' for w in warm[name])}"
        )
    ratio = statistics.median(times["on"]) / statistics.median(times["off"])
    print(f"p50 on / off: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--url")
    parser.add_argument(
        "--postgres", action="store_true", help="start a private pgserver (Postgres 16) for the run"
    )
    parser.add_argument("--expansion", type=int, default=20)
    parser.add_argument("--cosine", type=float, default=0.4)
    parser.add_argument("--weight", type=float, default=0.3)
    args = parser.parse_args()
    if not args.postgres:
        asyncio.run(run(args))
        return
    from benchlib.servers import Databases, sqlalchemy_url

    databases = Databases()
    try:
        args.url = sqlalchemy_url(databases.pg_dsn("expansion"))
        asyncio.run(run(args))
    finally:
        databases.close()


if __name__ == "__main__":
    main()
