"""Turn-loop benchmark: one agent's turn on either side, a run of N agents, and the checks."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

from .stats import Samples
from .turnprobe import PROBE_QUERY, engine_of, message, statement_log

__all__ = [
    "CALLS",
    "COUNTED_TURNS",
    "MemstoreSide",
    "Phase",
    "count_rows",
    "one_turn",
    "packing_share",
    "read_parts",
    "run_phase",
    "same_recall",
    "statements_per_turn",
]

CALLS = ("context", "remember", "append")


@dataclass
class Phase:
    """One side's turns at one N: wall time, and latencies of each turn and each call."""

    turns: int = 0
    seconds: float = 0.0
    turn: Samples = field(default_factory=Samples)
    calls: dict[str, Samples] = field(default_factory=lambda: {c: Samples() for c in CALLS})


class MemstoreSide:
    def __init__(self, store: Any) -> None:
        self.store = store

    async def context(self, tenant: str, session: str, query: str) -> int:
        ctx = await self.store.context(user_id=tenant, session_id=session, query=query)
        return len(ctx.items)

    async def remember(self, tenant: str, session: str, said: str, answered: str) -> None:
        from memstore import Episode

        await self.store.remember(
            Episode(user_id=tenant, session_id=session, input=said, output=answered)
        )

    async def append(self, tenant: str, thread: str, payload: dict[str, Any]) -> None:
        await self.store.threads.append(
            thread, payload, from_id="user", to_id="agent", user_id=tenant
        )


async def one_turn(
    side: Any, tenant: str, session: str, thread: str, rng: random.Random, phase: Phase | None
) -> None:
    said, answered = message(rng)
    t0 = time.perf_counter()
    await side.context(tenant, session, said)
    t1 = time.perf_counter()
    await side.remember(tenant, session, said, answered)
    t2 = time.perf_counter()
    await side.append(tenant, thread, {"role": "user", "text": said})
    t3 = time.perf_counter()
    if phase is not None:
        phase.turn.add(t3 - t0)
        for call, seconds in zip(CALLS, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            phase.calls[call].add(seconds)


async def run_phase(
    side: Any,
    prefix: str,
    agents: int,
    turns_each: int,
    label: str,
    done: dict[str, int],
    phase: Phase,
) -> None:
    async def agent(i: int) -> None:
        tenant = f"{prefix}{i}"
        rng = random.Random(f"{label}-{i}")  # the same messages on both sides
        for _ in range(turns_each):
            await one_turn(side, tenant, f"live-{label}", f"agent-{label}", rng, phase)
            done[tenant] += 1

    start = time.perf_counter()
    await asyncio.gather(*(agent(i) for i in range(agents)))
    phase.seconds += time.perf_counter() - start
    phase.turns += agents * turns_each


async def count_rows(store: Any, table: str) -> dict[str, int]:
    from sqlalchemy import text

    async with engine_of(store).connect() as conn:  # the guard reads around both sides
        rows = (
            await conn.execute(text(f"SELECT user_id, count(*) FROM {table} GROUP BY user_id"))
        ).all()
    return {str(u): int(n) for u, n in rows}


COUNTED_TURNS = 20


async def statements_per_turn(
    store: Any, sides: dict[str, Any], done: dict[str, int]
) -> dict[str, float]:
    """Data statements (not BEGIN/COMMIT) each side sends per turn over ``COUNTED_TURNS``
    turns of one agent, and how many of memstore's are its buffered access-count writes."""
    with statement_log(engine_of(store)) as log:
        rng = random.Random("count")
        for _ in range(COUNTED_TURNS):
            await one_turn(sides["memstore"], "m0", "live-count", "agent-count", rng, None)
        await asyncio.sleep(0.5)  # a background access flush the turns started
    done["m0"] += COUNTED_TURNS
    data = [sql for sql, _, _ in log if sql.split()[0].upper() not in ("BEGIN", "COMMIT")]
    loads = [sql for sql in data if "episodes.embedding, episodes.occurred_at" in sql]
    flushes = [
        sql for sql in data if "access_stats" in sql and not sql.lstrip().startswith("SELECT")
    ]
    raw = sides["raw"]
    before = raw.statements
    rng = random.Random("count")
    for _ in range(COUNTED_TURNS):
        await one_turn(raw, "r0", "live-count", "agent-count", rng, None)
    done["r0"] += COUNTED_TURNS
    return {
        "memstore": len(data) / COUNTED_TURNS,
        "raw": (raw.statements - before) / COUNTED_TURNS,
        "access_writes": len(flushes) / COUNTED_TURNS,
        "vector_loads": len(loads) / COUNTED_TURNS,
    }


async def packing_share(store: Any, done: dict[str, int]) -> tuple[float, float]:
    """Mean ms per turn of context() and of the packing inside it, over ``COUNTED_TURNS``
    turns of one agent (memstore's ``pack`` timed by wrapping it for this pass only)."""
    import memstore.services.agent.builder as builder

    packing = Samples()
    namespace = vars(builder)  # build_context looks pack up in its module at each call
    original = namespace["pack"]

    def timed_pack(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            packing.add(time.perf_counter() - start)

    phase = Phase()
    namespace["pack"] = timed_pack
    try:
        rng = random.Random("pack")
        for _ in range(COUNTED_TURNS):
            await one_turn(MemstoreSide(store), "m0", "live-pack", "agent-pack", rng, phase)
    finally:
        namespace["pack"] = original
    done["m0"] += COUNTED_TURNS
    context = phase.calls["context"]
    return context.total / len(context) * 1000, packing.total / len(context) * 1000


async def same_recall(raw: Any, tenant: str) -> list[str]:
    """Whether the raw loop's recall statements find what memstore's found (same rows, order)."""
    problems = []
    for kind in ("facts", "episodes"):
        theirs = [r[1] for r in await raw.replay(kind)]
        ours = [r[1] for r in await raw.recall(kind, tenant, PROBE_QUERY)]
        if not theirs or ours != theirs:
            problems.append(
                f"{kind} recall: the raw loop found {len(ours)} rows, memstore's statement "
                f"{len(theirs)}; the first differing at {_first_difference(ours, theirs)}"
            )
    return problems


def _first_difference(a: list[Any], b: list[Any]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


async def read_parts(store: Any, raw: Any) -> dict[str, tuple[float, float]]:
    """Median ms of each read of ``context()`` alone, memstore's public call against the raw
    loop's statement: one agent, ``COUNTED_TURNS`` queries, the two sides alternating.

    Recalls ask for what ``context()`` asks at the default budget (50 facts, 50 episodes
    + 11 for the own session's turns); no turn is written in between, so SQLite's vector
    cache is current on both sides. Both sides are warmed first with the same queries.
    """
    rng = random.Random("parts")
    queries = [message(rng)[0] for _ in range(COUNTED_TURNS)]
    parts: dict[str, tuple[Any, Any]] = {
        "blocks": (
            lambda q: store.working(user_id="m0"),
            lambda q: raw.blocks("r0"),
        ),
        "facts recall": (
            lambda q: store.recall_facts_scored(q, user_id="m0", limit=50),
            lambda q: raw.recall("facts", "r0", q),
        ),
        "episodes recall": (
            lambda q: store.recall_scored(q, user_id="m0", limit=61),
            lambda q: raw.recall("episodes", "r0", q),
        ),
    }
    out = {}
    with store.reads_unrecorded():
        for name, (ours, theirs) in parts.items():
            samples = (Samples(), Samples())
            # Warm: every pooled connection of either side prepares the statement and
            # reads the tenant's pages once (aiosqlite's pool hands them out in turn).
            for q in queries + queries:
                await ours(q)
                await theirs(q)
            for i, q in enumerate(queries):
                order = ((0, ours), (1, theirs)) if i % 2 == 0 else ((1, theirs), (0, ours))
                for side, call in order:
                    start = time.perf_counter()
                    await call(q)
                    samples[side].add(time.perf_counter() - start)
            out[name] = (samples[0].p50 * 1000, samples[1].p50 * 1000)
    return out
