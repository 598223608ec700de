"""Where a ``threads.wait`` wake-up's time goes, stage by stage, in one run.

    python scripts/measure_wakeup.py [--backends sqlite,postgres] [--n 200] [--interval 0.05]

Process A appends a slot every ``--interval`` seconds (jittered) and records when
each ``append()`` was called and returned; process B waits with ``threads.wait``
and, instrumented, records on the system-wide monotonic clock when the news
reached it (Postgres: the NOTIFY read off the listening connection; SQLite: the
inotify event, then the ``data_version`` read that showed the commit), when its
waiting task resumed, and when its read of the slot started and ended. Printed:
the median and p90 of each stage, in ms, from A's return.

``--floor``: in one process with nothing else running, the median time of B's
read of one slot as ``threads.wait`` makes it before and after a wake-up (a
read transaction: the tenant's change head, then the slots), as it makes it
now (the slots alone, one autocommit statement), a bare checkout of that
connection, and the same slot query on the raw driver (asyncpg prepared once;
aiosqlite's one call), so what the layers above the driver cost is in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import random
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib.servers import Databases, sqlalchemy_url  # noqa: E402

from memstore.schema.migrate import upgrade  # noqa: E402

THREAD, USER = "handoff", "bench"
Cycle = dict[str, float]
_cycle: Cycle = {}


def _mark(name: str) -> None:
    _cycle.setdefault(name, time.monotonic())


def _instrument() -> None:
    """Timestamps at each stage of B's wake-up (first occurrence per waiting cycle)."""
    import asyncpg.connection

    from memstore.backends.sqlite import signal as sqlite_signal
    from memstore.db import signal as db_signal
    from memstore.db.unit import Database

    def wrap(owner: Any, name: str, before: str | None, after: str | None) -> None:
        original = getattr(owner, name)

        if asyncio.iscoroutinefunction(original):

            async def coro(*args: Any, **kwargs: Any) -> Any:
                if before:
                    _mark(before)
                result = await original(*args, **kwargs)
                if after:
                    _mark(after)
                return result

            setattr(owner, name, coro)
        else:

            def plain(*args: Any, **kwargs: Any) -> Any:
                if before:
                    _mark(before)
                result = original(*args, **kwargs)
                if after:
                    _mark(after)
                return result

            setattr(owner, name, plain)

    wrap(asyncpg.connection.Connection, "_process_notification", "1 news received", None)
    wrap(sqlite_signal._Hints, "_on_readable", "1 news received", None)  # noqa: SLF001
    wrap(db_signal.ChangeSignal, "wake", "2 waiter woken", None)
    wrap(db_signal.ChangeSignal, "wake_all", "2 waiter woken", None)
    original_wait = db_signal.Waiter.wait

    async def wait(self: Any, seconds: float | None) -> bool:
        _cycle.clear()
        woke: bool = await original_wait(self, seconds)
        _mark("3 task resumed")
        return woke

    setattr(db_signal.Waiter, "wait", wait)  # noqa: B010
    original_read = Database.read

    @asynccontextmanager
    async def read(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        _mark("4 read started")
        async with original_read(self, *args, **kwargs) as session:
            _mark("5 session ready")
            yield session
            _mark("6 statements done")
        _mark("7 read ended")

    setattr(Database, "read", read)  # noqa: B010
    original_statement = Database.statement

    @asynccontextmanager
    async def statement(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        _mark("4 read started")
        async with original_statement(self, *args, **kwargs) as connection:
            _mark("5 session ready")
            yield connection
            _mark("6 statements done")
        _mark("7 read ended")

    setattr(Database, "statement", statement)  # noqa: B010


async def _wait_loop(url: str, n: int, ready: Any, out: Any) -> None:
    from memstore import MemoryStore

    _instrument()
    got: dict[int, Cycle] = {}
    async with MemoryStore.open(url) as store:
        ready.set()
        last = -1
        while len(got) < n:
            slots = await store.threads.wait(THREAD, after=last, timeout=30, user_id=USER)
            now = time.monotonic()
            if not slots:
                break
            for slot in slots:
                got[slot.index] = {**_cycle, "8 slot held": now}
            last = slots[-1].index
    out.put(got)


def _waiter(url: str, n: int, ready: Any, out: Any) -> None:
    asyncio.run(_wait_loop(url, n, ready, out))


async def _append_all(url: str, n: int, interval: float) -> dict[int, tuple[float, float]]:
    from memstore import MemoryStore

    sent: dict[int, tuple[float, float]] = {}
    async with MemoryStore.open(url) as store:
        for i in range(n):
            await asyncio.sleep(interval * random.uniform(0.5, 1.5))
            called = time.monotonic()
            slot = await store.threads.append(
                THREAD, {"task": i}, from_id="A", to_id="B", user_id=USER
            )
            sent[slot.index] = (called, time.monotonic())
    return sent


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def run(url: str, n: int, interval: float, say: Callable[[str], None]) -> None:
    ctx = mp.get_context("spawn")
    ready, out = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_waiter, args=(url, n, ready, out))
    child.start()
    try:
        if not ready.wait(120):
            raise RuntimeError("the waiter did not start")
        time.sleep(0.5)
        sent = asyncio.run(_append_all(url, n, interval))
        got: dict[int, Cycle] = out.get(timeout=120)
    finally:
        child.join(timeout=60)
    stages = sorted({name for cycle in got.values() for name in cycle})
    say("| stage | p50 ms from A's return | p90 | p50 from previous stage | slots with it |")
    say("|---|---|---|---|---|")
    previous: str | None = None
    for stage in stages:
        rel = [got[i][stage] - sent[i][1] for i in got if stage in got[i]]
        step = [
            got[i][stage] - got[i][previous]
            for i in got
            if previous is not None and stage in got[i] and previous in got[i]
        ]
        say(
            f"| {stage} | {_pct(rel, 50) * 1000:.2f} | {_pct(rel, 90) * 1000:.2f} "
            f"| {(_pct(step, 50) * 1000 if step else 0):.2f} | {len(rel)} |"
        )
        previous = stage
    calls = [ret - call for call, ret in sent.values()]
    held = [got[i]["8 slot held"] - sent[i][0] for i in got]
    say(f"A's append, call to return: p50 {_pct(calls, 50) * 1000:.2f} ms")
    say(f"B holds the slot, from A's call: p50 {_pct(held, 50) * 1000:.2f} ms")


async def _floor(url: str, raw_target: str, backend: str, say: Callable[[str], None]) -> None:
    import statistics

    from memstore import MemoryStore
    from memstore.core.tenancy import storage_user_id
    from memstore.db.unit import Database
    from memstore.repositories.changes import ChangeLogRepository
    from memstore.repositories.threads import SlotReads, ThreadRepository

    async with MemoryStore.open(url) as store:
        for i in range(5):
            await store.threads.append(THREAD, {"i": i}, from_id="A", to_id="B", user_id=USER)
        # The store's unit of work, to time B's read on its own.
        db: Database = getattr(store, "_db")  # noqa: B009
        user = storage_user_id(USER)

        async def transaction() -> object:
            async with db.read(user) as session:
                await ChangeLogRepository(session=session).head(user)
                return await ThreadRepository(session=session).slots(user, THREAD, start=4)

        async def statement() -> object:
            async with db.statement(user) as reader:
                return await SlotReads(reader=reader).after(user, THREAD, start=4, limit=None)

        async def checkout() -> object:
            async with db.statement(user):
                return None

        sql = (
            "SELECT * FROM slots WHERE user_id = {0} AND thread_id = {1} "
            "AND slot_index >= {2} ORDER BY slot_index"
        )
        if backend == "postgres":
            import asyncpg

            conn = await asyncpg.connect(raw_target)
            prepared = await conn.prepare(sql.format("$1", "$2", "$3"))

            async def raw() -> object:
                return await prepared.fetch(user, THREAD, 4)
        else:
            import aiosqlite

            conn = await aiosqlite.connect(raw_target)
            query = sql.format("?", "?", "?")

            async def raw() -> object:
                return await conn.execute_fetchall(query, (user, THREAD, 4))

        try:
            say("| B's read of one slot | median ms |")
            say("|---|---|")
            for name, call in (
                ("read transaction: change head, then slots (ORM session)", transaction),
                ("the slots alone, one autocommit statement (Core)", statement),
                ("checkout and return of that connection, no statement", checkout),
                ("the slot query on the raw driver", raw),
            ):
                times = []
                for n in range(350):
                    started = time.perf_counter()
                    await call()
                    if n >= 50:
                        times.append(time.perf_counter() - started)
                say(f"| {name} | {statistics.median(times) * 1000:.3f} |")
        finally:
            await conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--floor", action="store_true", help="B's read alone, in one process")
    args = parser.parse_args()
    dbs = Databases()
    try:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                url = dbs.sqlite_url("wake")
                raw_target = url.removeprefix("sqlite+aiosqlite:///")
            else:
                raw_target = dbs.pg_dsn("wake")
                url = sqlalchemy_url(raw_target)
            asyncio.run(upgrade(url))
            print(f"\n## {backend}\n")
            if args.floor:
                asyncio.run(_floor(url, raw_target, backend, print))
            else:
                run(url, args.n, args.interval, print)
    finally:
        dbs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
