#!/usr/bin/env python
"""memstore on a real Citus cluster against one plain PostgreSQL 15 node, same data, same run.

    python scripts/bench_citus.py                          # a few minutes
    python scripts/bench_citus.py --episodes 2000 --seconds 8 --queries 15   # smoke

Starts, in private temp directories on free ports, a Citus 13 cluster from
``../shared/citus`` (coordinator + two workers, Debian's PostgreSQL 15, see
``tests/citus_cluster.py``) and one plain PostgreSQL 15 node with pgvector configured
like the cluster's nodes; stops all of them at the end, also on failure.

1. Loads the same episodes (seeded, clustered 384-d vectors, ``remember_many``) and a
   few facts per tenant into both, the cluster distributed by ``memstore citus --apply``
   with only ONE worker registered (every shard on it).
2. Throughput of a mixed many-tenant workload (remember, recall, context, add_fact,
   recall_facts; concurrent clients in one process) on the plain node, then on the
   cluster with one worker; then the second worker is added, ``citus_rebalance_start``
   moves shards to it (``citus_rebalance_wait``), and the cluster and the plain node
   are measured again.
3. recall, remember and context() p50 on the 3-node cluster against the plain node,
   the two interleaved query by query.

Every figure is a ratio to a baseline measured in the same run on the same machine;
all servers share its cores, so absolute times say little. Blocks are left out of the
workload (the run probes one update_block and reports what happened).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import sys
import time
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(1, str(SCRIPTS.parent))  # tests.citus_cluster: the cluster the tests use
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")

from benchlib.data import Workload, tenant_name  # noqa: E402
from benchlib.memapi import LookupEmbedder, migrate, open_store  # noqa: E402
from benchlib.pg15 import pg15_unavailable, private_pg15  # noqa: E402
from benchlib.rows import episodes_of  # noqa: E402
from benchlib.servers import machine_info  # noqa: E402
from benchlib.stats import Samples, ms, ratio  # noqa: E402

LOAD_BATCH = 500
# asyncpg runs its type-introspection query (``WITH RECURSIVE typeinfo_tree …``) on each
# connection the first time a statement there has a type it has not seen (recall, remember
# and context each have one). On the plain node that query takes milliseconds; on the Citus
# coordinator it took seconds here, so fresh connections dominate a short phase. Each store
# gets a fixed pool (no overflow connections opened and closed), every phase is preceded by
# an untimed warm-up of the same workload, and the report counts the introspections left
# inside the timed phase.
POOL_PER_CLIENT = 3
INTROSPECTIONS = Counter[str]()


def _count_introspections(dbapi_connection: Any, _record: Any) -> None:
    def logged(query: Any) -> None:
        if "typeinfo_tree" in str(getattr(query, "query", "")):
            INTROSPECTIONS["typeinfo"] += 1

    # The asyncpg connection under SQLAlchemy's adapter; add_query_logger is asyncpg's API.
    dbapi_connection._connection.add_query_logger(logged)  # noqa: SLF001


FACTS_PER_TENANT = 4
# operation -> share of the mixed workload (blocks left out: see the module docstring)
MIX = {"remember": 0.3, "recall": 0.3, "context": 0.2, "add_fact": 0.1, "recall_facts": 0.1}


def log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=6_000, help="episodes loaded (default 6000)")
    p.add_argument("--tenants", type=int, default=60, help="tenants sharing them (default 60)")
    p.add_argument("--queries", type=int, default=40, help="timed calls per operation and target")
    p.add_argument("--seconds", type=float, default=20.0, help="length of each throughput phase")
    p.add_argument("--warmup", type=float, default=20.0, help="untimed seconds before each phase")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients in the mixed load")
    p.add_argument("--shards", type=int, default=32, help="shards per table (Citus's default 32)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    return p.parse_args(argv)


@dataclass
class Target:
    name: str
    url: str
    embedder: LookupEmbedder = field(default_factory=LookupEmbedder)


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import asyncpg

    conn = await asyncpg.connect(_asyncpg_dsn(url))
    try:
        return [tuple(r) for r in await conn.fetch(statement)]
    finally:
        await conn.close()


_QUERY_TEXTS: dict[int, list[str]] = {}


def query_text(work: Workload, tenant: int, k: int) -> str:
    """The k-th of 8 fixed query texts of ``tenant`` (their vectors are registered)."""
    if tenant not in _QUERY_TEXTS:
        _QUERY_TEXTS[tenant] = [text for text, _ in work.queries(tenant, 8)]
    return _QUERY_TEXTS[tenant][k]


def fact_words(work: Workload, tenant: int) -> list[str]:
    topics = random.Random(tenant).sample(range(len(work.topic_words)), FACTS_PER_TENANT)
    return [work.topic_words[t][0] for t in topics]


async def load(target: Target, work: Workload) -> float:
    """Episodes through remember_many, then facts; returns the seconds it took."""
    from memstore import Fact

    start = time.perf_counter()
    async with open_store(target.url, target.embedder) as store:
        for chunk in work.chunks(LOAD_BATCH):
            await store.remember_many(episodes_of(work, chunk, embedder=target.embedder))
        for t in range(work.n_tenants):
            for n, word in enumerate(fact_words(work, t)):
                await store.add_fact(
                    Fact(
                        subject="user", predicate=f"likes_{n}", object=word, user_id=tenant_name(t)
                    )
                )
    return time.perf_counter() - start


def register_queries(targets: list[Target], work: Workload, per_tenant: int) -> None:
    for t in range(work.n_tenants):
        for text, vector in work.queries(t, per_tenant):
            for target in targets:
                target.embedder.register(text, vector)


async def one_call(store: Any, op: str, work: Workload, rng: random.Random, tag: str) -> None:
    from memstore import Episode, Fact

    tenant = rng.randrange(work.n_tenants)
    user = tenant_name(tenant)
    query = query_text(work, tenant, rng.randrange(8))
    if op == "remember":
        await store.remember(
            Episode(user_id=user, session_id=f"{tag}-{tenant}", input=query, output="ok " + query)
        )
    elif op == "recall":
        await store.recall(query, user_id=user, limit=10)
    elif op == "context":
        await store.context(user_id=user, session_id=f"{tag}-{tenant}", query=query)
    elif op == "add_fact":
        await store.add_fact(
            Fact(subject="user", predicate="mentions", object=query.split()[0], user_id=user)
        )
    elif op == "recall_facts":
        await store.recall_facts(query, user_id=user, limit=5)
    else:
        raise ValueError(op)


@dataclass
class Throughput:
    label: str
    ops: int
    seconds: float
    client_cpu: float  # CPU seconds of this (client) process per wall second
    errors: Counter[str]
    per_op: dict[str, Samples]
    introspections: int  # asyncpg type-introspection queries inside the timed phase

    @property
    def rate(self) -> float:
        return self.ops / self.seconds


async def mixed(target: Target, work: Workload, args: argparse.Namespace, label: str) -> Throughput:
    from memstore.errors import MemstoreError

    ops = list(MIX)
    weights = [MIX[o] for o in ops]
    done = Counter[str]()
    errors = Counter[str]()
    per_op: dict[str, Samples] = {}
    pool = {"pool_size": POOL_PER_CLIENT * args.clients, "max_overflow": 0}
    async with open_store(target.url, target.embedder, engine_options=pool) as store:

        async def client(c: int, stop: float, timed: bool) -> None:
            rng = random.Random(c + (1000 if timed else 0))  # same calls in every phase
            while time.perf_counter() < stop:
                op = rng.choices(ops, weights)[0]
                try:
                    started = time.perf_counter()
                    await one_call(store, op, work, rng, label)
                    if timed:
                        per_op.setdefault(op, Samples()).add(time.perf_counter() - started)
                        done[op] += 1
                except MemstoreError as error:
                    errors[f"{op}: {type(error).__name__}"] += 1

        warm_until = time.perf_counter() + args.warmup
        await asyncio.gather(*(client(c, warm_until, False) for c in range(args.clients)))
        INTROSPECTIONS.clear()
        cpu0, t0 = time.process_time(), time.perf_counter()
        stop = t0 + args.seconds
        await asyncio.gather(*(client(c, stop, True) for c in range(args.clients)))
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    return Throughput(
        label, sum(done.values()), wall, cpu / wall, errors, per_op, INTROSPECTIONS["typeinfo"]
    )


async def latencies(targets: list[Target], work: Workload, n: int) -> dict[str, dict[str, Samples]]:
    """p50 samples per operation and target, the targets alternating call by call."""
    from memstore import Episode

    rng = random.Random(11)
    calls = [(rng.randrange(work.n_tenants), rng.randrange(8)) for _ in range(n)]
    result: dict[str, dict[str, Samples]] = {}
    async with open_store(targets[0].url, targets[0].embedder) as a:
        async with open_store(targets[1].url, targets[1].embedder) as b:
            stores = {targets[0].name: a, targets[1].name: b}
            operations: dict[str, Callable[[Any, str, str, int], Awaitable[Any]]] = {
                "recall": lambda s, user, q, i: s.recall(q, user_id=user, limit=10),
                "context": lambda s, user, q, i: s.context(
                    user_id=user, session_id=f"lat-{i}", query=q
                ),
                "remember": lambda s, user, q, i: s.remember(
                    Episode(user_id=user, session_id=f"lat-{i}", input=q, output="ok " + q)
                ),
            }
            for op, call in operations.items():
                samples = {name: Samples() for name in stores}
                for i, (tenant, k) in enumerate(calls):
                    user = tenant_name(tenant)
                    query = query_text(work, tenant, k)
                    order = list(stores) if i % 2 == 0 else list(reversed(stores))
                    for name in order:
                        if i < 3:  # warm-up, not timed
                            await call(stores[name], user, query, i)
                            continue
                        start = time.perf_counter()
                        await call(stores[name], user, query, i)
                        samples[name].add(time.perf_counter() - start)
                result[op] = samples
    return result


async def connection_setup(url: str, times: int = 5) -> Samples:
    """Seconds to open a memstore engine's first connection (codecs registered), SELECT 1."""
    from sqlalchemy import text

    from memstore.db.engine import create_engine

    samples = Samples()
    for _ in range(times):
        engine = create_engine(url)
        try:
            start = time.perf_counter()
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            samples.add(time.perf_counter() - start)
        finally:
            await engine.dispose()
    return samples


async def probe_blocks(url: str, embedder: LookupEmbedder) -> str:
    from memstore.errors import MemstoreError

    async with open_store(url, embedder) as store:
        try:
            await store.update_block("persona", "bench probe", user_id=tenant_name(0))
        except MemstoreError as error:
            return f"failed: {type(error).__name__}: {str(error)[:160]}"
        except Exception as error:  # the bug being reported: a raw driver error
            return f"failed with a raw {type(error).__name__}: {str(error).splitlines()[0][:160]}"
    return "works"


async def placements(url: str) -> dict[int, int]:
    rows = await sql(
        url,
        "SELECT n.nodeport, count(*) FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) "
        "JOIN pg_dist_shard s USING (shardid) JOIN pg_dist_partition d USING (logicalrelid) "
        "WHERE d.partmethod = 'h' GROUP BY 1 ORDER BY 1",
    )
    return {int(r[0]): int(r[1]) for r in rows}


def report(
    args: argparse.Namespace,
    argv: list[str],
    facts: dict[str, Any],
    loads: dict[str, float],
    phases: list[Throughput],
    lat: dict[str, dict[str, Samples]],
) -> str:
    by = {p.label: p for p in phases}
    lines = [
        "## memstore on a 3-node Citus cluster vs one PostgreSQL 15 node",
        "",
        f"Command: `python scripts/bench_citus.py{' ' + shlex.join(argv) if argv else ''}`",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in facts.items()]
    lines += [
        "",
        f"Load ({args.episodes:,} episodes, {args.tenants} tenants, remember_many in batches "
        f"of {LOAD_BATCH} + {FACTS_PER_TENANT} add_fact per tenant): plain "
        f"{loads['plain']:.1f} s, cluster with one worker {loads['cluster']:.1f} s "
        f"({ratio(loads['cluster'], loads['plain'])} the plain node's time).",
        "",
        f"### Mixed workload throughput ({args.clients} clients, {args.seconds:.0f} s per phase "
        f"after {args.warmup:.0f} s untimed, "
        f"mix {', '.join(f'{k} {v:.0%}' for k, v in MIX.items())})",
        "",
        "| phase | ops/s | ratio to | client process CPU | type introspections | errors |",
        "|---|---|---|---|---|---|",
    ]
    baselines = {
        "cluster, 1 worker": "plain, before",
        "cluster, 2 workers": "plain, after",
        "plain, after": "plain, before",
    }
    for p in phases:
        base = baselines.get(p.label)
        vs = f"{ratio(p.rate, by[base].rate)} ({base})" if base else "baseline"
        errs = ", ".join(f"{k} x{v}" for k, v in p.errors.items()) or "none"
        lines.append(
            f"| {p.label} | {p.rate:.1f} | {vs} | {p.client_cpu:.0%} of a core | "
            f"{p.introspections} | {errs} |"
        )
    lines += [
        "",
        "p50 ms per operation during those phases:",
        "",
        "| phase | " + " | ".join(MIX) + " |",
        "|---|" + "---|" * len(MIX),
    ]
    for p in phases:
        cells = [ms(p.per_op[op].p50) if op in p.per_op else "-" for op in MIX]
        lines.append(f"| {p.label} | " + " | ".join(cells) + " |")
    one, two = by["cluster, 1 worker"], by["cluster, 2 workers"]
    lines += [
        "",
        f"2 workers / 1 worker: **{ratio(two.rate, one.rate)}** ops/s "
        f"(plain node, same phases: {ratio(by['plain, after'].rate, by['plain, before'].rate)}).",
        "",
        f"### p50 latency, 3-node cluster vs plain node ({args.queries} calls each, "
        "interleaved, 3 warm-up calls not timed)",
        "",
        "| operation | cluster p50 ms | plain p50 ms | cluster / plain |",
        "|---|---|---|---|",
    ]
    for op, samples in lat.items():
        on_cluster, on_plain = samples["cluster"].p50, samples["plain"].p50
        lines.append(
            f"| {op} | {ms(on_cluster)} | {ms(on_plain)} | {ratio(on_cluster, on_plain)} |"
        )
    return "\n".join(lines) + "\n"


async def run(
    args: argparse.Namespace, cluster_url: str, worker2: int, plain_url: str
) -> tuple[dict[str, Any], dict[str, float], list[Throughput], dict[str, dict[str, Samples]]]:
    from memstore.backends.postgresql.citus import apply_citus

    facts: dict[str, Any] = {}
    # One worker first: the second is registered by cluster.sh; take it out before
    # anything is distributed, add it back for the rebalance.
    await sql(cluster_url, f"SELECT citus_remove_node('127.0.0.1', {worker2})")
    for url in (cluster_url, plain_url):
        await migrate(url)
    ran = await apply_citus(cluster_url)
    log(f"distributed: {len(ran)} statements; shards per node {await placements(cluster_url)}")
    cluster, plain = Target("cluster", cluster_url), Target("plain", plain_url)
    work = Workload(args.episodes, args.tenants, big_share=1.0 / args.tenants)
    loads = {}
    for target in (plain, cluster):
        log(f"loading {target.name}")
        loads[target.name] = await load(target, work)
    register_queries([plain, cluster], work, 8)
    for url in (cluster_url, plain_url):
        await sql(url, "ANALYZE")
    facts["blocks on the cluster (update_block probe)"] = await probe_blocks(
        cluster_url, cluster.embedder
    )
    setup = {t.name: await connection_setup(t.url) for t in (cluster, plain)}
    facts["new connection incl. type introspection, p50 (cluster / plain)"] = (
        f"{ms(setup['cluster'].p50)} ms / {ms(setup['plain'].p50)} ms = "
        f"{ratio(setup['cluster'].p50, setup['plain'].p50)}"
    )
    facts["shard placements before rebalance (port: shards)"] = await placements(cluster_url)
    phases = []
    for target, label in ((plain, "plain, before"), (cluster, "cluster, 1 worker")):
        log(f"mixed workload: {label}")
        phases.append(await mixed(target, work, args, label))
    log("adding the second worker and rebalancing")
    start = time.perf_counter()
    await sql(cluster_url, f"SELECT citus_add_node('127.0.0.1', {worker2})")
    # block_writes: the nodes run with wal_level=replica, so no logical replication.
    await sql(cluster_url, "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')")
    await sql(cluster_url, "SELECT citus_rebalance_wait()")
    facts["rebalance (citus_add_node + citus_rebalance_start/wait, block_writes)"] = (
        f"{time.perf_counter() - start:.1f} s"
    )
    facts["shard placements after rebalance (port: shards)"] = await placements(cluster_url)
    for url in (cluster_url,):
        await sql(url, "ANALYZE")
    for target, label in ((cluster, "cluster, 2 workers"), (plain, "plain, after")):
        log(f"mixed workload: {label}")
        phases.append(await mixed(target, work, args, label))
    log("latency, interleaved")
    lat = await latencies([cluster, plain], work, args.queries + 3)
    return facts, loads, phases, lat


def main(argv: list[str]) -> int:
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    from tests.citus_cluster import citus_unavailable, private_citus_cluster

    args = parse(argv)
    event.listen(Pool, "connect", _count_introspections)
    reason = citus_unavailable() or pg15_unavailable()
    if reason is not None:
        print(f"bench_citus: cannot run here: {reason}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    with private_citus_cluster(prefix="memstore-bench-citus-") as nodes, private_pg15() as plain:
        cluster_url = nodes.create_database("bench", shard_count=args.shards)
        versions = asyncio.run(sql(cluster_url, "SELECT version(), citus_version()"))[0]
        facts: dict[str, Any] = {
            "machine": ", ".join(
                f"{k} {v}" for k, v in machine_info().items() if k in ("nproc", "cpu", "memory")
            ),
            "memstore code": machine_info()["memstore code"],
            "servers": f"{str(versions[0]).split(' on ')[0]}; {str(versions[1]).split(' on ')[0]}"
            "; cluster nodes and the plain node all on this machine, fsync=off, "
            "shared_buffers 128MB each",
            "load average before the run (1/5/15 min)": " / ".join(f"{x:.2f}" for x in load_before),
            "shards per distributed table": args.shards,
        }
        more, loads, phases, lat = asyncio.run(run(args, cluster_url, nodes.port + 2, plain))
        facts.update(more)
    facts["load average after the run"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    facts["run time"] = f"{time.perf_counter() - t0:.0f} s"
    text = report(args, argv, facts, loads, phases, lat)
    print(text)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "facts": {k: str(v) for k, v in facts.items()},
                    "loads": loads,
                    "throughput": {p.label: p.rate for p in phases},
                    "p50_ms": {
                        op: {t: s.p50 * 1000 for t, s in samples.items()}
                        for op, samples in lat.items()
                    },
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
