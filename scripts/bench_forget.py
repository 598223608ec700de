"""Measure what erasing one tenant costs on SQLite, and which part costs what.

    python scripts/bench_forget.py --users 50 --episodes-per-user 1000

Builds a SQLite database of ``users`` tenants with ``episodes-per-user`` episodes
and two facts each (in a private temp dir), then erases tenants one at a time:

* ``forget``: the full ``store.forget(user_id=...)`` (deletes with
  ``secure_delete``, FTS5 'optimize' of the touched indexes, WAL truncation);
* the same deletes plus FTS5 'optimize', without secure_delete or WAL
  truncation, on another tenant;
* the same deletes alone (no erasure guarantees beyond the rows), on a third one.

Prints the file and full-text index sizes and the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore import Episode, Fact, MemoryStore
from memstore.core.tenancy import storage_user_id
from memstore.db.engine import create_engine
from memstore.db.scrub import purge_full_text
from memstore.repositories.tenants import TenantRepository

WORDS = (
    "paris london jazz hiking coffee tea berlin lisbon dog cat sister brother "
    "flight hotel meeting report deadline budget garden piano"
).split()


def _text(user: int, i: int) -> str:
    words = [WORDS[(user * 7 + i * 3 + k) % len(WORDS)] for k in range(12)]
    return f"turn {i} of user{user}: " + " ".join(words) + f" token{user}x{i}"


async def _fill(store: MemoryStore, users: int, per_user: int) -> None:
    for u in range(users):
        episodes = [
            Episode(user_id=f"user{u}", session_id=f"s{i // 20}", input=_text(u, i), output="noted")
            for i in range(per_user)
        ]
        for start in range(0, per_user, 1000):
            await store.remember_many(episodes[start : start + 1000])
        await store.add_fact(
            Fact(user_id=f"user{u}", subject="me", predicate="likes", object=f"thing{u}")
        )
        await store.add_fact(
            Fact(user_id=f"user{u}", subject="me", predicate="lives_in", object=f"city{u}")
        )


async def _fts_bytes(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return sum(
            [
                int(
                    await conn.scalar(text(f"SELECT coalesce(sum(length(block)), 0) FROM {t}")) or 0
                )
                for t in ("episodes_fts_data", "facts_fts_data")
            ]
        )


async def _file_bytes(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        pages = await conn.scalar(text("PRAGMA page_count"))
        size = await conn.scalar(text("PRAGMA page_size"))
        return int(pages or 0) * int(size or 0)


async def _delete(engine: AsyncEngine, user: str, *, optimize: bool) -> float:
    started = time.perf_counter()
    async with engine.begin() as conn:
        # secure_delete is per connection: off for this one transaction only.
        await conn.exec_driver_sql("PRAGMA secure_delete = OFF")
        session = AsyncSession(bind=conn)
        await TenantRepository(session=session).erase(storage_user_id(user))
        if optimize:
            await purge_full_text(session, ["episodes", "facts"])
        await conn.exec_driver_sql("PRAGMA secure_delete = ON")
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--episodes-per-user", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memstore-bench-forget-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'forget.db'}"
        # The raw deletes compared with forget() run on an engine of their own.
        engine = create_engine(url)
        async with MemoryStore.open(url, auto_migrate=True) as store:
            started = time.perf_counter()
            await _fill(store, args.users, args.episodes_per_user)
            print(
                f"filled {args.users} x {args.episodes_per_user} episodes in "
                f"{time.perf_counter() - started:.1f} s; file "
                f"{await _file_bytes(engine) / 1e6:.1f} MB, FTS5 data "
                f"{await _fts_bytes(engine) / 1e6:.1f} MB"
            )
            forget, optimized, plain = [], [], []
            for r in range(args.repeat):
                started = time.perf_counter()
                await store.forget(user_id=f"user{r}")
                forget.append(time.perf_counter() - started)
                optimized.append(await _delete(engine, f"user{args.repeat + r}", optimize=True))
                plain.append(await _delete(engine, f"user{2 * args.repeat + r}", optimize=False))
            for label, runs in (
                ("forget (complete erasure)", forget),
                ("deletes + FTS5 optimize, no secure_delete/WAL truncate", optimized),
                ("deletes only", plain),
            ):
                print(
                    f"{label}: median {statistics.median(runs):.3f} s {[round(x, 3) for x in runs]}"
                )
        await engine.dispose()


if __name__ == "__main__":
    asyncio.run(main())
