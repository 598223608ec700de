#!/usr/bin/env python
"""The turn loop on a Citus cluster while ``citus_rebalance_start`` moves its shards.

    python scripts/bench_citus_rebalance.py                       # ~4 minutes
    python scripts/bench_citus_rebalance.py --agents 4 --seconds 10 --episodes 50   # smoke

First the baseline: the same agents, seeded alike, for --seconds on one plain PostgreSQL 15
node (``benchlib/pg15.py``, configured like the cluster's nodes). Then a private Citus
cluster (coordinator + two workers, ``tests/citus_cluster.py``): the second worker is
taken out, migrates and distributes (every shard on one worker), seeds
--agents tenants with --episodes past turns each, then runs the turn loop (``context()`` +
``remember()`` + ``threads.append()`` per turn, one asyncio task per agent, one store):

1. *before*: --seconds of turns on the one-worker cluster;
2. *during*: the second worker is added and ``citus_rebalance_start`` moves shards to it
   (``block_writes``: the nodes run with ``wal_level = replica``); the agents take turns
   until ``citus_rebalance_wait`` returns;
3. *after*: --seconds of turns on the two-worker cluster.

Calls failing with a retryable memstore error (Unavailable, Conflict) are retried as a user
would (tests/citus_turns.py); anything else is a leak. Afterwards every tenant's episodes
and slots are read back against what the calls returned. Exits 1 on a leak, a lost or
duplicated write, or a gap in a thread's positions. Prints p50/p99 per turn per phase.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
import time
import warnings
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(1, str(SCRIPTS.parent))  # tests.citus_cluster, tests.citus_turns
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")

from benchlib.servers import machine_info  # noqa: E402
from benchlib.stats import Samples, ms  # noqa: E402


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", type=int, default=16, help="concurrent agents (default 16)")
    p.add_argument("--episodes", type=int, default=300, help="seeded past turns per tenant")
    p.add_argument("--seconds", type=float, default=30.0, help="length of before / after")
    p.add_argument("--shards", type=int, default=16, help="shards per distributed table")
    return p.parse_args(argv)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        return [tuple(r) for r in await conn.fetch(statement)]
    finally:
        await conn.close()


async def placements(url: str) -> dict[int, int]:
    rows = await sql(
        url,
        "SELECT n.nodeport, count(DISTINCT s.shardid) FROM pg_dist_placement p "
        "JOIN pg_dist_node n USING (groupid) JOIN pg_dist_shard s USING (shardid) "
        "JOIN pg_dist_partition d USING (logicalrelid) WHERE d.partmethod = 'h' GROUP BY 1",
    )
    return {int(r[0]): int(r[1]) for r in rows}


async def seed(url: str, tenants: list[str], episodes: int) -> None:
    from memstore import Episode, MemoryStore

    async with MemoryStore.open(url) as store:
        for t in tenants:
            await store.remember_many(
                [
                    Episode(user_id=t, session_id=f"{t}-s{n // 50}", input=f"past {n}", output="ok")
                    for n in range(episodes)
                ]
            )


Windows = dict[str, tuple[float, float, Any]]  # phase -> (start, end, its ledger)


async def timed_phase(
    store: Any,
    ledger: Any,
    tenants: list[str],
    name: str,
    until: Any,
    windows: Windows,
    *,
    warm: bool = False,
) -> None:
    """Every agent takes turns until ``until()``; the phase's window is recorded.

    ``warm``: first one untimed turn each (the pool's connections, asyncpg's caches).
    """
    from tests.citus_turns import agent

    if warm:
        await asyncio.gather(
            *(agent(store, ledger, t, turns=1, label=f"{name}-warm") for t in tenants)
        )
    start = time.perf_counter()
    await asyncio.gather(*(agent(store, ledger, t, until=until, label=name) for t in tenants))
    windows[name] = (start, time.perf_counter(), ledger)


def for_seconds(seconds: float) -> Any:
    stop = time.perf_counter() + seconds
    return lambda: time.perf_counter() > stop


async def checked(url: str, ledger: Any, tenants: list[str]) -> list[str]:
    from memstore.db.engine import create_engine
    from tests.citus_turns import check

    engine = create_engine(url)
    try:
        return await check(engine, ledger, tenants)
    finally:
        await engine.dispose()


async def on_plain(args: argparse.Namespace, url: str, windows: Windows) -> list[str]:
    """The "before" phase's turns on one plain PostgreSQL 15 node: the baseline."""
    from memstore import MemoryStore
    from memstore.schema.migrate import upgrade
    from tests.citus_turns import Ledger

    await upgrade(url)
    tenants = [f"agent{i}" for i in range(args.agents)]
    await seed(url, tenants, args.episodes)
    ledger = Ledger()
    pool = {"pool_size": args.agents + 2, "max_overflow": 0}
    log("one plain node")
    async with MemoryStore.open(url, engine_options=pool) as store:
        await timed_phase(
            store, ledger, tenants, "one plain node", for_seconds(args.seconds), windows, warm=True
        )
    return await checked(url, ledger, tenants)


async def on_cluster(args: argparse.Namespace, url: str, worker2: int, windows: Windows) -> Any:
    from memstore import MemoryStore
    from memstore.backends.postgresql.citus import apply_citus
    from memstore.schema.migrate import upgrade
    from tests.citus_turns import Ledger

    await sql(url, f"SELECT citus_remove_node('127.0.0.1', {worker2})")
    await upgrade(url)
    await apply_citus(url)
    tenants = [f"agent{i}" for i in range(args.agents)]
    t0 = time.perf_counter()
    await seed(url, tenants, args.episodes)
    log(f"seeded {len(tenants)} tenants in {time.perf_counter() - t0:.0f} s")
    out: dict[str, Any] = {"before": await placements(url)}
    ledger = Ledger()
    pool = {"pool_size": args.agents + 2, "max_overflow": 0}
    async with MemoryStore.open(url, engine_options=pool) as store:
        log("cluster, one worker")
        await timed_phase(
            store, ledger, tenants, "before", for_seconds(args.seconds), windows, warm=True
        )
        log("during: citus_add_node + citus_rebalance_start")
        moved = asyncio.Event()

        async def rebalance() -> None:
            try:
                await sql(url, f"SELECT citus_add_node('127.0.0.1', {worker2})")
                await sql(
                    url, "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')"
                )
                await sql(url, "SELECT citus_rebalance_wait()")
            finally:
                moved.set()

        started = time.perf_counter()
        await asyncio.gather(
            rebalance(), timed_phase(store, ledger, tenants, "during", moved.is_set, windows)
        )
        out["rebalance seconds"] = time.perf_counter() - started
        out["after"] = await placements(url)
        log("cluster, two workers")
        await timed_phase(store, ledger, tenants, "after", for_seconds(args.seconds), windows)
    out["problems"] = await checked(url, ledger, tenants)
    out["ledger"] = ledger
    return out


def report(argv: list[str], facts: dict[str, Any], out: Any, windows: Windows) -> str:
    ledger = out["ledger"]
    lines = [
        "## The turn loop on a Citus cluster during a shard rebalance",
        "",
        f"Command: `python scripts/bench_citus_rebalance.py"
        f"{' ' + shlex.join(argv) if argv else ''}`",
        "",
        *(f"- {k}: {v}" for k, v in facts.items()),
        f"- shards per node (port: shards) before {out['before']}, after {out['after']}; "
        f"citus_add_node + citus_rebalance_start + citus_rebalance_wait took "
        f"{out['rebalance seconds']:.1f} s",
        "",
        "| phase | turns | turns/s | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, (start, end, of) in windows.items():
        samples = Samples()
        for begun, seconds in of.turns:
            if start <= begun < end:
                samples.add(seconds)
        top = max(samples.values) if samples.values else float("nan")
        lines.append(
            f"| {name} | {len(samples)} | {len(samples) / (end - start):.1f} | "
            f"{ms(samples.p50)} | {ms(samples.pct(99))} | {ms(top)} |"
        )
    lines += ["", "Failed calls on the cluster (each retried by the loop):", ""]
    lines += [
        f"- {key} x{n}: {ledger.examples[key]}" for key, n in ledger.failures.most_common()
    ] or ["- none"]
    problems = out["problems"]
    lines += [
        "",
        f"- remember() retries that found their episode already stored: {ledger.stored_before}",
        f"- appends stored by an attempt that failed, then again by its retry: "
        f"{len(ledger.landed_failed)}",
        f"- leaks (raw or non-retryable errors): {len(ledger.leaks)}",
        f"- read back on the cluster: {sum(map(len, ledger.remembered.values()))} episodes, "
        f"{sum(map(len, ledger.appended.values()))} slots; problems: {len(problems)}",
        *(f"  - {p}" for p in problems[:20]),
        *(f"  - leak: {leak}" for leak in ledger.leaks[:10]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    from benchlib.pg15 import pg15_unavailable, private_pg15

    from tests.citus_cluster import citus_unavailable, private_citus_cluster

    args = parse(argv)
    reason = citus_unavailable() or pg15_unavailable()
    if reason is not None:
        print(f"bench_citus_rebalance: cannot run here: {reason}", file=sys.stderr)
        return 2
    info = machine_info()
    facts: dict[str, Any] = {
        "memstore code": info["memstore code"],
        "machine": f"{info['nproc']} cpus, {info['cpu']}, {info['memory']}",
        "load average before (1/5/15 min)": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "agents": f"{args.agents}, {args.episodes} seeded episodes each, {args.shards} shards",
    }
    windows: Windows = {}
    with private_pg15() as plain:
        plain_problems = asyncio.run(on_plain(args, plain, windows))
    with private_citus_cluster(prefix="memstore-bench-rebalance-") as nodes:
        url = nodes.create_database("rebalance", shard_count=args.shards)
        out = asyncio.run(on_cluster(args, url, nodes.port + 2, windows))
    out["problems"] += [f"plain node: {p}" for p in plain_problems]
    facts["load average after"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(report(argv, facts, out, windows))
    return 1 if out["problems"] or out["ledger"].leaks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
