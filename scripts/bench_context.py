"""Measure per-turn context build latency for one large user, on SQLite and Postgres.

    python scripts/bench_context.py                     # both: SQLite file + pgserver Postgres
    python scripts/bench_context.py --url postgresql://…/db --runs 30

Seeds one user with --episodes episodes (in sessions of 50 turns), --facts current
facts and 4 working blocks (plus a second, noise tenant of the same size), then times
``store.context(user_id, session_id, query, max_tokens)`` for random 2-3 word queries
and reports the median and p95 of --runs timed calls after a few warm-up calls. The
access buffer is flushed between calls so the timing does not depend on when a
background flush happens. The numbers measure whatever recall implementation the
store currently has.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.words import TOPICS, sentence

from memstore import Episode, Fact, MemoryStore
from memstore.schema.migrate import upgrade


async def seed(store: MemoryStore, user: str, episodes: int, facts: int) -> list[str]:
    rng = random.Random(hash(user) & 0xFFFF)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    sessions = [f"{user}-s{n}" for n in range(max(1, episodes // 50))]
    batch: list[Episode] = []
    for n in range(episodes):
        batch.append(
            Episode(
                user_id=user,
                session_id=sessions[n // 50 % len(sessions)],
                input=sentence(rng, rng.randint(8, 30)),
                output=sentence(rng, rng.randint(10, 60)),
                occurred_at=start + timedelta(minutes=10 * n),
            )
        )
        if len(batch) == 1000:
            await store.remember_many(batch)
            batch = []
    if batch:
        await store.remember_many(batch)
    for n in range(facts):
        await store.add_fact(
            Fact(
                user_id=user,
                subject=f"{user}",
                predicate=f"pref_{n}",
                object=f"{rng.choice(TOPICS)} {rng.choice(TOPICS)} {n}",
                single_valued=True,
                valid_from=start,
            )
        )
    for name in ("persona", "goals", "style", "notes"):
        await store.update_block(name, sentence(rng, 60), user_id=user)
    return sessions


async def bench(url: str, *, episodes: int, facts: int, runs: int, max_tokens: int) -> None:
    await upgrade(url)
    async with MemoryStore.open(url) as store:
        t0 = time.perf_counter()
        await store.forget(user_id="bench-user")
        await store.forget(user_id="bench-noise")
        sessions = await seed(store, "bench-user", episodes, facts)
        await seed(store, "bench-noise", episodes, facts)
        seeded = time.perf_counter() - t0
        rng = random.Random(7)
        samples: list[float] = []
        parts: dict[str, list[float]] = {"recall_scored": [], "recall_facts": []}
        for n in range(runs + 3):
            query = " ".join(rng.sample(TOPICS, rng.randint(2, 3)))
            session = rng.choice(sessions)
            t = time.perf_counter()
            ctx = await store.context(
                user_id="bench-user", session_id=session, query=query, max_tokens=max_tokens
            )
            elapsed = time.perf_counter() - t
            assert ctx.used_tokens <= max_tokens
            if n >= 3:  # warm-up
                samples.append(elapsed)
                with store.reads_unrecorded():
                    t = time.perf_counter()
                    await store.recall_scored(query, user_id="bench-user", limit=20)
                    parts["recall_scored"].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    await store.recall_facts(query, user_id="bench-user", limit=20)
                    parts["recall_facts"].append(time.perf_counter() - t)
            await store.flush_access()
        backend = url.split(":", 1)[0]
        ms = sorted(s * 1000 for s in samples)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        print(
            f"{backend}: {episodes} episodes, {facts} facts (+ a noise tenant of the same "
            f"size; seeded in {seeded:.0f} s); context(max_tokens={max_tokens}) over "
            f"{runs} runs: median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, "
            f"min {ms[0]:.1f} ms; items packed in last run: {len(ctx.items)}"
        )
        for name, values in parts.items():
            print(f"    {name}(limit=20) median {statistics.median(values) * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", action="append", help="database URL (repeatable)")
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--max-tokens", type=int, default=2_000)
    args = parser.parse_args()
    urls = args.url or []
    server = None
    if not urls:
        tmp = tempfile.mkdtemp(prefix="memstore-bench-")
        os.chmod(tmp, 0o755)  # pgserver may run postgres as another user
        urls.append(f"sqlite+aiosqlite:///{tmp}/bench.db")
        import pgserver

        server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
        urls.append(server.get_uri())
    for url in urls:
        asyncio.run(
            bench(
                url,
                episodes=args.episodes,
                facts=args.facts,
                runs=args.runs,
                max_tokens=args.max_tokens,
            )
        )
    if server is not None:
        server.cleanup()


if __name__ == "__main__":
    main()
