#!/usr/bin/env python
"""Where recall's extra time on a Citus cluster goes: memstore vs its own statements, raw.

    python scripts/measure_citus_hop.py                 # ~2 minutes
    python scripts/measure_citus_hop.py --calls 50      # smoke

Starts a private Citus cluster (coordinator + two workers, ``tests/citus_cluster.py``)
and one plain PostgreSQL 15 node configured like its nodes (``benchlib/pg15.py``), migrates
both (the cluster distributed by ``memstore citus --apply``), seeds --tenants tenants of
--rows episodes alike, and captures the statements one ``recall()`` sends on each. Then,
interleaved call by call, p50 on the cluster and on the plain node of:

- ``recall()`` (hybrid, k = 10) through memstore;
- the same statements with the same values on a raw asyncpg connection (pgvector's
  codec, custom plans as memstore asks) (what the database costs, without memstore);
- ``SELECT 1`` (the round trip) and a one-row routed read of a tenant table.

If memstore's cluster / plain ratio is the raw statements' ratio, the cluster's extra time
is in the database path (coordinator and worker), not in memstore's layers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(1, str(SCRIPTS.parent))  # tests.citus_cluster
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")

from benchlib.servers import machine_info  # noqa: E402
from benchlib.stats import Samples, ms, ratio  # noqa: E402
from benchlib.turnprobe import PROBE_QUERY, engine_of, open_measured, statement_log  # noqa: E402
from benchlib.words import sentence  # noqa: E402

ROUTED_READ = "SELECT id FROM episodes WHERE user_id = $1 LIMIT 1"


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=10, help="tenants seeded (default 10)")
    p.add_argument("--rows", type=int, default=400, help="episodes per tenant (default 400)")
    p.add_argument("--calls", type=int, default=200, help="timed calls per row and target")
    p.add_argument("--shards", type=int, default=32, help="shards per table on the cluster")
    return p.parse_args(argv)


def dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def prepare(url: str, tenants: list[str], rows: int, citus: bool) -> None:
    import random

    import asyncpg

    from memstore import Episode, MemoryStore
    from memstore.backends.postgresql.citus import apply_citus
    from memstore.schema.migrate import upgrade

    await upgrade(url)
    if citus:
        await apply_citus(url)
    rng = random.Random(7)
    async with MemoryStore.open(url) as store:
        for t in tenants:
            await store.remember_many(
                [
                    Episode(user_id=t, session_id=f"{t}-s{n // 50}", input=sentence(rng, 20))
                    for n in range(rows)
                ]
            )
    conn = await asyncpg.connect(dsn(url))
    try:
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def captured(store: Any, tenant: str) -> list[tuple[str, tuple[Any, ...]]]:
    """The data statements one warm recall() sends (its tenant statistics cached by the
    call before), with their values."""
    await store.recall(PROBE_QUERY, user_id=tenant, limit=10)
    with statement_log(engine_of(store)) as log:
        await store.recall(PROBE_QUERY, user_id=tenant, limit=10)
    return [
        (sql, tuple(params))
        for sql, params, _ in log
        if sql.lstrip().split()[0].upper() in ("SELECT", "WITH")
    ]


async def measure(args: argparse.Namespace, urls: dict[str, str]) -> dict[str, dict[str, Samples]]:
    from contextlib import AsyncExitStack

    import asyncpg

    tenants = [f"t{i}" for i in range(args.tenants)]
    for name, url in urls.items():
        await prepare(url, tenants, args.rows, citus=name == "cluster")
    async with AsyncExitStack() as stack:
        stores = {n: await stack.enter_async_context(open_measured(u)) for n, u in urls.items()}
        from pgvector.asyncpg import register_vector

        conns = {
            n: await asyncpg.connect(
                dsn(u), server_settings={"plan_cache_mode": "force_custom_plan"}
            )
            for n, u in urls.items()
        }
        for conn in conns.values():
            await register_vector(conn)
            stack.push_async_callback(conn.close)
        statements = {n: await captured(stores[n], tenants[0]) for n in urls}

        async def raw(name: str, tenant: str) -> None:
            for sql, params in statements[name]:  # autocommit, as memstore runs them
                await conns[name].fetch(sql, *params)

        rows: dict[str, Callable[[str, str], Awaitable[Any]]] = {
            "recall() through memstore": lambda n, t: stores[n].recall(
                PROBE_QUERY, user_id=t, limit=10
            ),
            "recall's statements, raw asyncpg": raw,
            "SELECT 1": lambda n, t: conns[n].fetchval("SELECT 1"),
            "one-row routed read": lambda n, t: conns[n].fetch(ROUTED_READ, t),
        }
        result: dict[str, dict[str, Samples]] = {r: {n: Samples() for n in urls} for r in rows}
        for i in range(args.calls + 5):
            order = list(urls) if i % 2 == 0 else list(reversed(urls))
            for row, call in rows.items():
                for name in order:
                    start = time.perf_counter()
                    await call(name, tenants[0])
                    if i >= 5:  # the first five warm caches and plans
                        result[row][name].add(time.perf_counter() - start)
        result["statements per recall"] = {n: Samples() for n in urls}
        for n in urls:
            result["statements per recall"][n].add(len(statements[n]))
    return result


def main(argv: list[str]) -> int:
    from benchlib.pg15 import pg15_unavailable, private_pg15

    from tests.citus_cluster import citus_unavailable, private_citus_cluster

    args = parse(argv)
    reason = citus_unavailable() or pg15_unavailable()
    if reason is not None:
        print(f"measure_citus_hop: cannot run here: {reason}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    with private_citus_cluster(prefix="memstore-hop-") as nodes, private_pg15() as plain:
        cluster = nodes.create_database("hop", shard_count=args.shards)
        result = asyncio.run(measure(args, {"cluster": cluster, "plain": plain}))
    load_after = os.getloadavg()
    counts = result.pop("statements per recall")
    print(
        f"memstore {machine_info()['memstore code']}; {args.tenants} tenants x {args.rows} "
        f"episodes, {args.shards} shards, {args.calls} calls per row and target, interleaved; "
        f"statements per recall: cluster {int(counts['cluster'].p50)}, plain "
        f"{int(counts['plain'].p50)}; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after"
    )
    print("\n| p50 | cluster ms | plain ms | cluster / plain | cluster - plain ms |")
    print("|---|---|---|---|---|")
    for row, samples in result.items():
        c, p = samples["cluster"].p50, samples["plain"].p50
        print(f"| {row} | {ms(c)} | {ms(p)} | {ratio(c, p)} | {(c - p) * 1000:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
