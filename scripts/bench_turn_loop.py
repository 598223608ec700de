"""The turn loop: N concurrent agents on one store, memstore against the same loop by hand.

    python scripts/bench_turn_loop.py                  # SQLite and pgserver Postgres, N = 1, 16, 64
    python scripts/bench_turn_loop.py --quick --backend sqlite

A turn of one agent is ``context()`` for the user's message (default budget) +
``remember()`` of the turn + ``threads.append()`` of the message, on the agent's own
tenant. Every tenant is seeded first with --episodes past turns (sessions of 50), 20
current facts and 4 working blocks. N agents (asyncio tasks in one process, one store)
each run their share of --turns turns; each round runs memstore and then the raw loop
(the order alternates between rounds, so drift hits both sides) on tenants of their
own, seeded alike, with the same messages. The raw loop (benchlib/turnraw.py) sends the
statements memstore sends, on aiosqlite / an asyncpg pool of memstore's pool size.

After the run the guard checks that both sides wrote one episode and one slot per turn
on every tenant and that the raw loop's context reads found episodes; it exits 1 if not.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.servers import Databases, machine_info, sqlalchemy_url
from benchlib.stats import Samples
from benchlib.turnprobe import (
    FACTS,
    SEED_BLOCKS,
    capture_templates,
    engine_of,
    open_measured,
    seed_tenant,
)
from benchlib.turnraw import RawSqliteTurns
from benchlib.turnraw_pg import RawPostgresTurns
from benchlib.turnrun import (
    CALLS,
    COUNTED_TURNS,
    MemstoreSide,
    Phase,
    count_rows,
    packing_share,
    read_parts,
    run_phase,
    same_recall,
    statements_per_turn,
)

SIDES = ("memstore", "raw")
TARGET = 0.8


async def bench_backend(
    backend: str, url: str, raw_addr: str, args: argparse.Namespace, log: Any
) -> dict[str, Any]:
    from memstore.db.engine import pool_capacity
    from memstore.embeddings.hashing import HashingEmbedder
    from memstore.schema.migrate import upgrade

    await upgrade(url)
    most = max(args.agents)
    done: dict[str, int] = defaultdict(int)
    result: dict[str, Any] = {"phases": {}}
    async with open_measured(url) as store:
        t0 = time.perf_counter()
        for i in range(most):
            for prefix in ("m", "r"):
                await seed_tenant(store, f"{prefix}{i}", args.episodes, seed=i)
        await seed_tenant(store, "probe", args.episodes, seed=10_000)
        log(f"{backend}: seeded {2 * most + 1} tenants in {time.perf_counter() - t0:.0f} s")
        templates = await capture_templates(store, "probe", "probe-live")
        size = pool_capacity(engine_of(store)) or 15
        result["pool"] = size
        raw_cls = RawSqliteTurns if backend == "sqlite" else RawPostgresTurns
        path = raw_addr.split(":///", 1)[1] if backend == "sqlite" else raw_addr
        raw = raw_cls(path, size, HashingEmbedder(), templates)
        await raw.open()
        try:
            problems = await same_recall(raw, "probe")
            sides = {"memstore": MemstoreSide(store), "raw": raw}
            prefixes = {"memstore": "m", "raw": "r"}
            for name in SIDES:  # warm-up: every tenant's first turn (caches, connections)
                await run_phase(sides[name], prefixes[name], most, 1, "warm", done, Phase())
            connects = {"n": 0}

            def connected(*_: Any) -> None:
                connects["n"] += 1

            # new connections memstore's pool opens during the timed turns
            event.listen(engine_of(store).sync_engine, "connect", connected)
            result["connects"] = {}
            for n in args.agents:
                connects["n"] = 0
                each = max(args.min_each, math.ceil(args.turns / n))
                phases = {name: Phase() for name in SIDES}
                for r in range(args.rounds):
                    order = SIDES if r % 2 == 0 else SIDES[::-1]
                    for name in order:
                        await run_phase(
                            sides[name], prefixes[name], n, each, f"n{n}-r{r}", done, phases[name]
                        )
                result["phases"][n] = phases
                result["connects"][n] = connects["n"]
                log(
                    f"{backend} N={n}: "
                    + ", ".join(f"{k} {p.turns / p.seconds:.1f} turns/s" for k, p in phases.items())
                )
            event.remove(engine_of(store).sync_engine, "connect", connected)
            result["statements"] = await statements_per_turn(store, sides, done)
            result["packing"] = await packing_share(store, done)
            result["parts"] = await read_parts(store, raw)
            result["empty_reads"] = raw.empty_reads
            episodes = await count_rows(store, "episodes")
            slots = await count_rows(store, "slots")
        finally:
            await raw.close()
    for tenant, turns in sorted(done.items()):
        if episodes.get(tenant, 0) != args.episodes + turns:
            problems.append(
                f"{tenant}: {episodes.get(tenant, 0)} episodes, expected "
                f"{args.episodes} seeded + {turns} turns"
            )
        if slots.get(tenant, 0) != turns:
            problems.append(f"{tenant}: {slots.get(tenant, 0)} slots, expected {turns}")
    if raw.empty_reads:
        problems.append(f"the raw loop's context found no episode {raw.empty_reads} times")
    result["problems"] = problems
    result["turns_checked"] = sum(done.values())
    return result


def _ms(s: Samples, q: float) -> str:
    return f"{s.pct(q) * 1000:.1f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "n/a"


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> list[str]:
    lines = [
        "| backend | N | memstore turns/s | raw turns/s | ratio | memstore p50 ms | "
        "raw p50 ms | p50 ratio | memstore p99 ms | raw p99 ms | p99 ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    calls = [
        "| backend | N | call | memstore p50 ms | raw p50 ms | p50 ratio | "
        "memstore p99 ms | raw p99 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for backend, res in results.items():
        for n, phases in res["phases"].items():
            m, r = phases["memstore"], phases["raw"]
            mt, rt = m.turns / m.seconds, r.turns / r.seconds
            verdicts.append(mt / rt >= TARGET)
            lines.append(
                f"| {backend} | {n} | {mt:.1f} | {rt:.1f} | {_ratio(mt, rt)} | "
                f"{_ms(m.turn, 50)} | {_ms(r.turn, 50)} | {_ratio(m.turn.p50, r.turn.p50)} | "
                f"{_ms(m.turn, 99)} | {_ms(r.turn, 99)} | "
                f"{_ratio(m.turn.pct(99), r.turn.pct(99))} |"
            )
            for call in CALLS:
                mc, rc = m.calls[call], r.calls[call]
                calls.append(
                    f"| {backend} | {n} | {call} | {_ms(mc, 50)} | {_ms(rc, 50)} | "
                    f"{_ratio(mc.p50, rc.p50)} | {_ms(mc, 99)} | {_ms(rc, 99)} |"
                )
    out = [
        "## Turn loop: throughput and latency per turn (ratio = memstore / raw)",
        "",
        *lines,
        "",
        "## Per call (time inside the turn)",
        "",
        *calls,
        "",
    ]
    for backend, res in results.items():
        s = res["statements"]
        out.append(
            f"- {backend}: pool {res['pool']} connections on both sides; statements per "
            f"turn (mean of {COUNTED_TURNS}): memstore {s['memstore']:.2f} (of which "
            f"{s['access_writes']:.2f} are its buffered access-count writes, which the raw "
            f"loop does not do), raw {s['raw']:.2f}; "
            f"{res['turns_checked']} turns checked"
        )
        if s["vector_loads"]:
            out.append(
                f"- {backend}: memstore reloaded the tenant's episode vectors "
                f"{s['vector_loads']:.2f} times per turn (each turn's remember() changes the "
                "tenant's search version); the raw loop keeps the same cache the same way"
            )
        opened = ", ".join(f"N={n}: {c}" for n, c in res["connects"].items())
        out.append(
            f"- {backend}: new connections memstore's pool opened during the timed turns "
            f"({opened}); the raw pool keeps the ones it opened"
        )
        ctx_ms, pack_ms = res["packing"]
        out.append(
            f"- {backend}: one agent alone, context() took {ctx_ms:.1f} ms per turn on average, "
            f"{pack_ms:.1f} ms of it in packing the items into the budget (pack(), "
            "no database work; the raw loop does not pack)"
        )
    out.append(
        f"- seed per tenant: {args.episodes} episodes (sessions of 50), {FACTS} facts, "
        f"{len(SEED_BLOCKS)} blocks; {args.rounds} rounds per N, "
        f"turns per N per side: {args.rounds} x max({args.min_each}, ceil({args.turns}/N)) "
        "per agent"
    )
    parts = [
        "| backend | read (one agent, alone) | memstore p50 ms | raw p50 ms | ratio |",
        "|---|---|---|---|---|",
    ]
    for backend, res in results.items():
        for name, (ours, theirs) in res["parts"].items():
            parts.append(
                f"| {backend} | {name} | {ours:.2f} | {theirs:.2f} | {_ratio(ours, theirs)} |"
            )
    out += ["", "## The reads of context(), each alone", "", *parts, ""]
    met = all(verdicts)
    out.append(
        f"- target memstore/raw throughput >= {TARGET}x at every N: {'met' if met else 'NOT met'}"
    )
    return out


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgres"])
    parser.add_argument("--agents", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--episodes", type=int, help="seeded past turns per tenant")
    parser.add_argument("--turns", type=int, help="turns per side per round, split over N")
    parser.add_argument("--min-each", type=int, default=4, help="at least this many per agent")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--dir", help="where the databases go (default: a new temp dir)")
    args = parser.parse_args(argv)
    quick = {"agents": [1, 4], "episodes": 40, "turns": 8, "rounds": 2, "min_each": 2}
    full = {"agents": [1, 16, 64], "episodes": 300, "turns": 200, "rounds": 4}
    for key, value in (quick if args.quick else full).items():
        if key == "min_each" or getattr(args, key) is None:
            setattr(args, key, value)
    backends = args.backend or ["sqlite", "postgres"]
    dbs = Databases(args.dir)
    results: dict[str, dict[str, Any]] = {}
    try:
        for backend in backends:
            if backend == "sqlite":
                url = raw_addr = dbs.sqlite_url("turns")
            else:
                raw_addr = dbs.pg_dsn("turns")
                url = sqlalchemy_url(raw_addr)
            results[backend] = asyncio.run(bench_backend(backend, url, raw_addr, args, _log))
    finally:
        dbs.close()
    info = machine_info()
    print(
        f"memstore {info['memstore code']}; python {info['python']}, sqlite {info['sqlite']}, "
        f"{info['nproc']} cpus"
    )
    print("\n".join(report(results, args)))
    problems = [f"{b}: {p}" for b, res in results.items() for p in res["problems"]]
    for p in problems:
        print(f"GUARD FAILED: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
