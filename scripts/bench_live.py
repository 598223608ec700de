"""Live memory: wake-up latency across processes, and what the change feed costs an append.

    python scripts/bench_live.py [--n 200] [--appends 1000] [--backends sqlite,postgres]
                                 [--idle-seconds 10] [--idle-waiters 10] [--no-throughput]
                                 [--only-throughput] [--also REV ...]

1. Wake-up latency. Process A appends a slot to a thread every ``--interval``
   seconds (jittered, so a poller's phase is uniform); process B is woken and
   reads it. Latency = B holding the slot minus A calling ``append()`` (the
   hand-over as the producer sees it, its write and commit included), and minus
   ``append()`` returning (the commit is done; B can be woken before A's call
   returns, so this one can be negative), both on the system-wide monotonic
   clock. Ratios are of the from-call figures. B uses, in
   the same run: ``threads.wait`` (the live path: NOTIFY on Postgres,
   ``PRAGMA data_version`` on SQLite), polling ``get_from`` every 100 ms (what
   callers did before), and a Redis stream ``XREAD BLOCK`` (a private
   ``redis-server`` on a Unix socket; "skipped: <why>" without one). On SQLite
   also ``threads.wait`` with inotify refused, so it polls data_version every
   30 ms (the fallback, and what every platform did before file events).
2. What idle waiters cost: one process opens a store and measures its own CPU
   time (``time.process_time()``, all its threads) over ``--idle-seconds`` with
   no waiter, then with ``--idle-waiters`` waiting calls asleep on threads nobody
   writes to; the same for each way of waiting above.
3. Append throughput with and without the live machinery: sequential
   ``threads.append`` at this source tree and at the commit before the change log
   was added (the same script run on a ``git archive`` of that commit, each on a
   fresh database of its own), and at each ``--also`` revision; against the same
   append written by hand on the raw driver (benchlib.appendraw: one CTE statement
   on asyncpg; on aiosqlite the fewest statements, one call each, and the same run
   as one call on the connection's thread). Interleaved, median of ``--rounds``;
   ``--only-throughput`` runs this part alone.

Postgres is a private pgserver cluster in the run's temp dir (benchlib.servers).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib.appendrate import throughput  # noqa: E402
from benchlib.live import RedisServer, force_poll, idle_cost, redis_unavailable  # noqa: E402
from benchlib.servers import Databases, machine_info, sqlalchemy_url  # noqa: E402

from memstore.schema.migrate import upgrade  # noqa: E402

THREAD = "handoff"
USER = "bench"


# ---- process B: the waiters ------------------------------------------------------------


async def _wait_loop(url: str, n: int, ready: Any, out: Any) -> None:
    from memstore import MemoryStore

    got: dict[int, float] = {}
    async with MemoryStore.open(url) as store:
        ready.set()
        last = -1
        while len(got) < n:
            slots = await store.threads.wait(THREAD, after=last, timeout=30, user_id=USER)
            now = time.monotonic()
            if not slots:
                break
            for slot in slots:
                got[slot.index] = now
            last = slots[-1].index
    out.put(got)


async def _poll_loop(url: str, n: int, ready: Any, out: Any) -> None:
    from memstore import MemoryStore

    got: dict[int, float] = {}
    async with MemoryStore.open(url) as store:
        ready.set()
        deadline = time.monotonic() + 600
        while len(got) < n and time.monotonic() < deadline:
            for slot in await store.threads.get_from(THREAD, "A", user_id=USER):
                got.setdefault(slot.index, time.monotonic())
            await asyncio.sleep(0.1)
    out.put(got)


def _redis_loop(socket_path: str, n: int, ready: Any, out: Any) -> None:
    import redis

    client = redis.Redis(unix_socket_path=socket_path)
    got: dict[int, float] = {}
    last: Any = "0-0"
    ready.set()
    while len(got) < n:
        # [[stream, [(entry id, {field: value})...]]]; the client's types cover both
        # RESP versions, so Any here.
        answer: Any = client.xread({THREAD: last}, block=30_000)
        now = time.monotonic()
        if not answer:
            break
        for entry_id, fields in answer[0][1]:
            got[int(fields[b"i"])] = now
            last = entry_id
    out.put(got)


def _waiter(kind: str, target: str, n: int, ready: Any, out: Any) -> None:
    if kind == "redis":
        _redis_loop(target, n, ready, out)
    elif kind in ("wait", "wait-poll"):
        if kind == "wait-poll":
            force_poll()
        asyncio.run(_wait_loop(target, n, ready, out))
    else:
        asyncio.run(_poll_loop(target, n, ready, out))


# ---- process A: the appender -----------------------------------------------------------


Sent = dict[int, tuple[float, float]]  # slot index -> (append called, append returned)


async def _append_all(url: str, n: int, interval: float) -> Sent:
    from memstore import MemoryStore

    sent: Sent = {}
    async with MemoryStore.open(url) as store:
        for i in range(n):
            await asyncio.sleep(interval * random.uniform(0.5, 1.5))
            called = time.monotonic()
            slot = await store.threads.append(
                THREAD, {"task": i}, from_id="A", to_id="B", user_id=USER
            )
            sent[slot.index] = (called, time.monotonic())
    return sent


def _xadd_all(socket_path: str, n: int, interval: float) -> Sent:
    import redis

    client = redis.Redis(unix_socket_path=socket_path)
    sent: Sent = {}
    for i in range(n):
        time.sleep(interval * random.uniform(0.5, 1.5))
        called = time.monotonic()
        client.xadd(THREAD, {"i": i, "task": f"task {i}"})
        sent[i] = (called, time.monotonic())
    return sent


def latency(kind: str, target: str, n: int, interval: float) -> tuple[list[float], list[float]]:
    """Seconds to B holding each slot: from A calling append, and from append returning."""
    ctx = mp.get_context("spawn")
    ready, out = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_waiter, args=(kind, target, n, ready, out))
    child.start()
    try:
        if not ready.wait(120):
            raise RuntimeError(f"{kind} waiter did not start")
        time.sleep(0.5)  # the waiter is inside its first wait/XREAD by now
        if kind == "redis":
            sent = _xadd_all(target, n, interval)
        else:
            sent = asyncio.run(_append_all(target, n, interval))
        got: dict[int, float] = out.get(timeout=120)
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    missing = set(sent) - set(got)
    if missing:
        raise RuntimeError(f"{kind}: {len(missing)} of {n} slots never reached process B")
    order = sorted(sent)
    return [got[i] - sent[i][0] for i in order], [got[i] - sent[i][1] for i in order]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


Lat = tuple[list[float], list[float]]


_KINDS = {"sqlite": ("wait", "wait-poll", "poll"), "postgres": ("wait", "poll")}
_LABELS = {
    ("sqlite", "wait"): "threads.wait (inotify events)",
    ("sqlite", "wait-poll"): "threads.wait, inotify refused (30 ms data_version poll)",
    ("sqlite", "poll"): "get_from every 100 ms",
    ("postgres", "wait"): "threads.wait (LISTEN/NOTIFY)",
    ("postgres", "poll"): "get_from every 100 ms",
}


def _row(label: str, lat: Lat, wait: Lat) -> str:
    (called, returned), (w_called, _) = lat, wait
    p50, p99 = _pct(called, 50), _pct(called, 99)
    return (
        f"| {label} | {p50 * 1000:.1f} | {p99 * 1000:.1f} "
        f"| {_pct(returned, 50) * 1000:.1f} | {_pct(returned, 99) * 1000:.1f} "
        f"| {p50 / _pct(w_called, 50):.2f}x | {p99 / _pct(w_called, 99):.2f}x |"
    )


# ---- the run -----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="slots handed over per method")
    parser.add_argument("--interval", type=float, default=0.05, help="mean seconds between appends")
    parser.add_argument("--appends", type=int, default=1000, help="appends per throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per tree")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="CPU measuring window")
    parser.add_argument("--idle-waiters", type=int, default=10, help="idle waiting calls")
    parser.add_argument("--no-throughput", action="store_true", help="skip append throughput")
    parser.add_argument(
        "--only-throughput", action="store_true", help="append throughput only (part 3)"
    )
    parser.add_argument(
        "--also", action="append", default=[], metavar="REV", help="another tree to time (git rev)"
    )
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b]

    dbs = Databases()
    redis_server: RedisServer | None = None

    def fresh(backend: str, name: str) -> str:
        if backend == "sqlite":
            return dbs.sqlite_url(name)
        return sqlalchemy_url(dbs.pg_dsn(name))

    try:
        print("machine:", ", ".join(f"{k} {v}" for k, v in machine_info().items()))
        print(f"load average at start: {os.getloadavg()[0]:.1f}")
        if args.only_throughput:
            throughput(args, backends, dbs, fresh)
            return 0
        why = redis_unavailable()
        redis: Lat | None = None
        if why is None:
            redis_server = RedisServer(dbs.root)
            redis = latency("redis", redis_server.socket, args.n, args.interval)
        for backend in backends:
            print(f"\n## {backend}: wake-up latency, commit in A -> slot in B ({args.n} slots)\n")
            print(
                "| B's method | p50 ms from call | p99 ms from call | p50 ms from return "
                "| p99 ms from return | p50 / wait's | p99 / wait's |"
            )
            print("|---|---|---|---|---|---|---|")
            rows: dict[str, Lat] = {}
            for kind in _KINDS[backend]:
                url = fresh(backend, kind.replace("-", "_"))
                asyncio.run(upgrade(url))  # before B and A open it, not racing
                rows[kind] = latency(kind, url, args.n, args.interval)
            for kind in _KINDS[backend]:
                print(_row(_LABELS[backend, kind], rows[kind], rows["wait"]))
            if redis is not None:
                print(_row("Redis stream XREAD BLOCK (same run)", redis, rows["wait"]))
            else:
                print(f"| Redis stream XREAD BLOCK | skipped: {why} | | | | | |")

        for backend in backends:
            print(
                f"\n## {backend}: CPU of a process with a store, {args.idle_seconds:g} s "
                f"with no waiter, then {args.idle_waiters} idle waiters\n"
            )
            print("| waiters' method | % of a core, no waiter | with waiters | difference |")
            print("|---|---|---|---|")
            for kind in _KINDS[backend]:
                if kind == "poll":
                    continue  # a caller's own loop, not a waiter of the store
                url = fresh(backend, "idle_" + kind.replace("-", "_"))
                asyncio.run(upgrade(url))
                alone, waiting = idle_cost(
                    url, args.idle_waiters, args.idle_seconds, poll=kind == "wait-poll"
                )
                print(
                    f"| {_LABELS[backend, kind]} | {alone * 100:.2f} | {waiting * 100:.2f} "
                    f"| {(waiting - alone) * 100:+.2f} |",
                    flush=True,
                )
        if args.no_throughput:
            print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
            return 0
        throughput(args, backends, dbs, fresh)
    finally:
        if redis_server is not None:
            redis_server.stop()
        dbs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
