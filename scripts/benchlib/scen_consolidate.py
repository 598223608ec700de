"""Scenario 5: consolidation throughput with the rule extractor, 1 and 2 worker processes."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np

from .context import Context, Target, start_child
from .data import EPOCH
from .ingest_util import drop_hnsw
from .memapi import LookupEmbedder, open_store
from .stats import Section

if TYPE_CHECKING:
    from memstore import Episode

__all__ = ["run"]

CITIES = [
    "Paris",
    "London",
    "Berlin",
    "Lisbon",
    "Madrid",
    "Oslo",
    "Rome",
    "Vienna",
    "Prague",
    "Dublin",
    "Zurich",
    "Warsaw",
]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries", "Wayne Corp"]
LIKES = ["jazz", "hiking", "chess", "sushi", "gardening", "cycling", "painting", "opera"]
NAMES = ["Emma", "Rex", "Noah", "Mia", "Leo", "Ava", "Max", "Zoe"]
TEMPLATES = [
    "I live in {city}.",
    "I moved to {city} last week.",
    "I work at {company}.",
    "I joined {company}.",
    "I love {like}.",
    "I hate {like}.",
    "My sister is called {name}.",
    "I have a dog named {name}.",
    "What's the weather like tomorrow?",
    "Can you summarise this article for me?",
    "I relocated to {city}.",
    "I love {like}.",
]


def _episodes(n: int, users: int) -> list[Episode]:
    from memstore import Episode

    rng = np.random.default_rng(77)
    out = []
    for i in range(n):
        text = TEMPLATES[int(rng.integers(len(TEMPLATES)))].format(
            city=CITIES[int(rng.integers(len(CITIES)))],
            company=COMPANIES[int(rng.integers(len(COMPANIES)))],
            like=LIKES[int(rng.integers(len(LIKES)))],
            name=NAMES[int(rng.integers(len(NAMES)))],
        )
        user = i % users
        out.append(
            Episode(
                user_id=f"user{user:04d}",
                session_id=f"u{user}-s{i // (users * 10)}",
                input=text,
                output="Noted.",
                occurred_at=EPOCH + timedelta(hours=i),
            )
        )
    return out


async def _fill(target: Target, n: int, users: int) -> None:
    async with open_store(target.url, LookupEmbedder()) as store:
        episodes = _episodes(n, users)
        for lo in range(0, n, 1_000):
            await store.remember_many(episodes[lo : lo + 1_000])


def _workers(target: Target, count: int) -> dict[str, float]:
    procs = [start_child("consolidate", target.url) for _ in range(count)]
    results = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"consolidation worker failed: {err[-2000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    seconds = max(r["end"] for r in results) - min(r["start"] for r in results)
    total = {
        k: sum(r[k] for r in results) for k in ("processed", "added", "reinforced", "superseded")
    }
    return {**total, "seconds": seconds}


def run(ctx: Context) -> Section:
    n = ctx.args.consolidate_episodes
    users = max(1, n // 100)
    section = Section(
        f"5. Consolidation throughput: rule extractor, {n:,} episodes, {users} tenants"
    )
    from memstore import MemoryStore

    if not hasattr(MemoryStore, "consolidate_all_tenants"):
        section.note("Skipped: this memstore build has no consolidate_all_tenants().")
        return section
    section.note(
        "Episodes are short first-person statements (where the user lives, works, "
        "what they like, relatives, pets) mixed with questions that yield no fact. "
        "Workers are separate OS processes started together on the same database; "
        "time = first worker's start of consolidate() to the last one's end "
        "(interpreter start-up excluded). The baseline is the 1-worker run."
    )
    for backend in ctx.backends:
        single = None
        for count in (1, 2):
            target = ctx.fresh(backend, f"consolidate{count}")
            if backend == "postgres":
                asyncio.run(drop_hnsw(target))  # episode writes only set the stage here
            ctx.log(f"  consolidate {backend}: {n:,} episodes, {count} worker(s)")
            asyncio.run(_fill(target, n, users))
            r = _workers(target, count)
            rate = r["processed"] / r["seconds"]
            single = single or rate
            section.add(
                backend=backend,
                workers=count,
                processed=f"{r['processed']:,}",
                added=r["added"],
                reinforced=r["reinforced"],
                superseded=r["superseded"],
                seconds=f"{r['seconds']:.1f}",
                **{"episodes/s": f"{rate:,.0f}", "vs 1 worker": f"{rate / single:.2f}x"},
            )
            if r["processed"] != n:
                section.note(f"{backend}, {count} workers: processed {r['processed']} of {n}!")
            section.target(
                f"consolidation {backend}, {count} worker(s): episodes/s", f"{rate:,.0f}/s", None
            )
    return section
