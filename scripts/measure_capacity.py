"""Measure bytes per episode (row, vector, indexes) on PostgreSQL and SQLite.

Loads ``--episodes`` episodes across ``--tenants`` tenants through
``MemoryStore.remember_many`` (hashing embedder, 384-d vectors) into a private
pgserver PostgreSQL and a SQLite file, both in a fresh temp directory that is
removed afterwards, then reads the sizes from the databases themselves
(``pg_total_relation_size`` and each index on Postgres; ``dbstat`` on SQLite).
Used for the capacity table of docs/SCALING.md:

    python scripts/measure_capacity.py --episodes 30000 --tenants 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

from memstore import Episode, MemoryStore
from memstore.db.engine import create_engine
from memstore.schema.migrate import upgrade

WORDS = (
    "i we you my our trip paris dinner sister brother dog cat garden painting music "
    "concert work meeting project deadline doctor appointment flight hotel weekend "
    "birthday gift recipe pasta coffee morning run marathon book novel movie series "
    "moved city apartment job interview manager team launch bug release holiday beach "
    "mountain hike photo camera guitar lesson school kids homework plan tomorrow yesterday"
).split()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def episodes(n: int, tenants: int, seed: int = 7) -> list[Episode]:
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        tenant = i % tenants
        out.append(
            Episode(
                user_id=f"user-{tenant:05d}",
                session_id=f"s-{tenant}-{i // (tenants * 20)}",
                input=sentence(rng, rng.randint(8, 25)),
                output=sentence(rng, rng.randint(10, 40)),
                occurred_at=start + timedelta(minutes=i),
            )
        )
    return out


async def load(url: str, batch: list[Episode]) -> float:
    started = time.perf_counter()
    async with MemoryStore.open(url) as store:
        for i in range(0, len(batch), 1000):
            await store.remember_many(batch[i : i + 1000])
    return time.perf_counter() - started


async def pg_sizes(url: str) -> dict[str, Any]:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text("VACUUM ANALYZE"))
            row = (
                await conn.execute(
                    text(
                        "SELECT pg_total_relation_size('episodes'), pg_relation_size('episodes'), "
                        "pg_indexes_size('episodes'), "
                        "coalesce(pg_total_relation_size(reltoastrelid), 0) "
                        "FROM pg_class WHERE relname = 'episodes'"
                    )
                )
            ).one()
            indexes = {
                r[0]: int(r[1])
                for r in await conn.execute(
                    text(
                        "SELECT indexrelname, pg_relation_size(indexrelid) "
                        "FROM pg_stat_user_indexes WHERE relname = 'episodes' ORDER BY 1"
                    )
                )
            }
            text_bytes = (
                await conn.execute(
                    text(
                        "SELECT avg(octet_length(input) + octet_length(output)), "
                        "avg(pg_column_size(embedding)) FROM episodes"
                    )
                )
            ).one()
    finally:
        await engine.dispose()
    return {
        "total": int(row[0]),
        "heap": int(row[1]),
        "indexes": int(row[2]),
        "toast": int(row[3]),
        "per_index": indexes,
        "avg_text_bytes": float(text_bytes[0]),
        "avg_vector_bytes": float(text_bytes[1]),
    }


def sqlite_sizes(path: Path) -> dict[str, Any]:
    # The stdlib driver: a checkpoint cannot run inside the engine's BEGIN IMMEDIATE.
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            per_object = {
                name: int(size)
                for name, size in conn.execute(
                    "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
                )
            }
        except sqlite3.OperationalError:  # dbstat is a compile-time option of SQLite
            per_object = {}
    finally:
        conn.close()
    return {"file": path.stat().st_size, "per_object": per_object}


async def main() -> tuple[str | None, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--output", help="write the figures as JSON here")
    args = parser.parse_args()
    batch = episodes(args.episodes, args.tenants)
    root = Path(tempfile.mkdtemp(prefix="memstore-capacity-"))
    server = None
    result: dict[str, Any] = {"episodes": args.episodes, "tenants": args.tenants}
    try:
        sqlite_path = root / "capacity.db"
        sqlite_url = f"sqlite+aiosqlite:///{sqlite_path}"
        await upgrade(sqlite_url)
        result["sqlite_load_s"] = await load(sqlite_url, batch)
        result["sqlite"] = sqlite_sizes(sqlite_path)

        import pgserver

        server = pgserver.get_server(root / "pgdata", cleanup_mode="stop")
        admin = make_url(server.get_uri()).set(drivername="postgresql+asyncpg")
        engine = create_engine(
            admin.render_as_string(hide_password=False), isolation_level="AUTOCOMMIT"
        )
        async with engine.connect() as conn:
            await conn.execute(text("CREATE DATABASE capacity"))
        await engine.dispose()
        pg_url = admin.set(database="capacity").render_as_string(hide_password=False)
        await upgrade(pg_url)
        result["pg_load_s"] = await load(pg_url, batch)
        result["postgres"] = await pg_sizes(pg_url)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    n = args.episodes
    pg = result["postgres"]
    print(json.dumps(result, indent=2))
    print(
        f"postgres bytes/episode: total {pg['total'] / n:.0f} (heap {pg['heap'] / n:.0f}, "
        f"toast {pg['toast'] / n:.0f}, indexes {pg['indexes'] / n:.0f})"
    )
    for name, size in pg["per_index"].items():
        print(f"  {name}: {size / n:.0f} B/episode")
    print(f"sqlite bytes/episode: file {result['sqlite']['file'] / n:.0f}")
    for name, size in list(result["sqlite"]["per_object"].items())[:12]:
        print(f"  {name}: {size / n:.0f} B/episode")
    return args.output, result


if __name__ == "__main__":
    output, figures = asyncio.run(main())
    if output:
        Path(output).write_text(json.dumps(figures, indent=2) + "\n")
