"""Measure consolidation throughput (episodes/s) with the rule extractor.

    python scripts/bench_consolidation.py                       # SQLite in a temp dir
    python scripts/bench_consolidation.py --url postgresql://…   # a migrated or empty DB
    python scripts/bench_consolidation.py --pgserver             # a throw-away pgserver

Episodes are realistic one-line statements spread over --users tenants; the
database's tenant tables are wiped first, so point it at a scratch database.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstore import Episode, MemoryStore
from memstore.db.engine import create_engine
from memstore.repositories.tenants import tenant_tables

LINES = [
    "Hi, I'm {name}. I live in Paris.",
    "I work at Acme as well, and I love jazz.",
    "I love jazz.",
    "I moved to London last week.",
    "I have a dog named Rex.",
    "I hate traffic.",
    "I joined Globex.",
    "What's the weather like tomorrow?",
    "I relocated to Berlin.",
    "I'm flying to Lisbon on June 3.",
    "My sister is called Emma.",
    "Can you summarise this article for me?",
]


async def bench(url: str, episodes: int, users: int, batch_size: int) -> None:
    async with MemoryStore.open(url, auto_migrate=True) as store:
        engine = create_engine(url)
        try:
            async with engine.begin() as conn:
                for table in tenant_tables():
                    await conn.execute(table.delete())
        finally:
            await engine.dispose()
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        per_user = episodes // users
        batch = [
            Episode(
                user_id=f"user{u}",
                session_id=f"s{u}",
                input=LINES[i % len(LINES)].format(name=f"User{u}"),
                output="ok",
                occurred_at=t0 + timedelta(minutes=i),
            )
            for u in range(users)
            for i in range(per_user)
        ]
        for start in range(0, len(batch), 5_000):
            await store.remember_many(batch[start : start + 5_000])
        started = time.perf_counter()
        result = await store.consolidate_all_tenants(batch_size=batch_size)
        elapsed = time.perf_counter() - started
        print(
            f"{store.backend}: {result.processed} episodes, {users} users, "
            f"batch {batch_size}: {elapsed:.2f}s = {result.processed / elapsed:.0f} "
            f"episodes/s ({result.added} added, {result.reinforced} reinforced, "
            f"{result.superseded} superseded)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--pgserver", action="store_true", help="start a temporary pgserver")
    parser.add_argument("--episodes", type=int, default=3_000)
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url
        if args.pgserver:
            import pgserver

            server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
            url = server.get_uri()
        elif url is None:
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        asyncio.run(bench(url, args.episodes, args.users, args.batch_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
