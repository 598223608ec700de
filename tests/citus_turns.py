"""Agents taking turns on a Citus cluster while its shards move, and the ledger that checks them.

Shared by tests/test_citus_rebalance.py (a few agents, one shard move) and
scripts/bench_citus_rebalance.py (the turn loop's latency before and during a rebalance).

A turn is the turn loop's: ``context()`` + ``remember()`` + ``threads.append()`` on the
agent's own tenant. A call failing with a retryable memstore error (:class:`Unavailable`,
:class:`Conflict`) is retried as a user would: the same episode (same id) again, the same
message again. Every other failure is a *leak* (a raw driver error, or a memstore error that
tells the caller not to retry), recorded and retried too so the run goes on. Each
episode's id and each appended message's token are kept, so :func:`check` can read back
what each tenant holds and say what was lost, duplicated or stored by a failed call.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Episode, MemoryStore
from memstore.errors import Conflict, Unavailable

__all__ = [
    "RETRYABLE",
    "Ledger",
    "agent",
    "check",
    "session_of",
    "thread_of",
]

RETRYABLE = (Unavailable, Conflict)
# A call still failing after this many attempts is given up on and reported as lost.
_ATTEMPTS = 40
_BACKOFF = 0.05  # seconds, times the attempt number, capped at ten times
_WORDS = ("coffee", "paris", "train", "budget", "garden", "piano", "deadline", "recipe")

T = TypeVar("T")


def session_of(tenant: str) -> str:
    return f"{tenant}-live"


def thread_of(tenant: str) -> str:
    return f"{tenant}-thread"


@dataclass
class Ledger:
    """What the agents' calls returned, failed with, and wrote, as far as they know."""

    remembered: dict[str, list[str]] = field(default_factory=dict)  # tenant -> episode ids
    appended: dict[str, list[str]] = field(default_factory=dict)  # tenant -> message tokens
    failures: Counter[str] = field(default_factory=Counter)  # "call: ErrorClass" -> count
    examples: dict[str, str] = field(default_factory=dict)  # first message of each kind
    leaks: list[str] = field(default_factory=list)  # "call: type: message"
    given_up: list[str] = field(default_factory=list)  # calls that never succeeded
    stored_before: int = 0  # remember() retries that found their episode already stored
    # Append attempts that failed, per message token: one whose answer was lost after the
    # commit (a timeout during COMMIT) stored the message, and its retry stores it again.
    failed_appends: Counter[str] = field(default_factory=Counter)
    landed_failed: list[str] = field(default_factory=list)  # such copies, found by check()
    turns: list[tuple[float, float]] = field(default_factory=list)  # (start, seconds)

    def note(self, call: str, error: BaseException) -> None:
        key = f"{call}: {type(error).__name__}"
        self.failures[key] += 1
        self.examples.setdefault(key, (str(error).splitlines() or [repr(error)])[0][:300])
        if not isinstance(error, RETRYABLE):
            kind = f"{type(error).__module__}.{type(error).__qualname__}"
            self.leaks.append(f"{call}: {kind}: {error!r}"[:400])


async def _retried(ledger: Ledger, call: str, fn: Callable[[], Awaitable[T]]) -> T | None:
    for n in range(_ATTEMPTS):
        try:
            return await fn()
        except Exception as error:  # judged by the ledger: retryable, or a leak
            ledger.note(call, error)
            await asyncio.sleep(_BACKOFF * min(n + 1, 10))
    ledger.given_up.append(call)
    return None


async def _remember(store: MemoryStore, ledger: Ledger, tenant: str, episode: Episode) -> None:
    tried = False

    async def once() -> bool:
        nonlocal tried
        try:
            await store.remember(episode)
        except Conflict as error:
            # A retry of an attempt that did commit (its answer was lost) meets its own row.
            if tried and error.constraint == "pk_episodes":
                ledger.stored_before += 1
                return True
            raise
        finally:
            tried = True
        return True

    if await _retried(ledger, "remember", once):
        ledger.remembered.setdefault(tenant, []).append(episode.id)


async def _append(store: MemoryStore, ledger: Ledger, tenant: str, token: str) -> None:
    async def once() -> bool:
        try:
            await store.threads.append(
                thread_of(tenant), {"token": token}, from_id="user", to_id="agent", user_id=tenant
            )
        except Exception:
            ledger.failed_appends[token] += 1
            raise
        return True

    if await _retried(ledger, "append", once):
        ledger.appended.setdefault(tenant, []).append(token)


async def agent(
    store: MemoryStore,
    ledger: Ledger,
    tenant: str,
    *,
    turns: int | None = None,
    until: Callable[[], bool] | None = None,
    label: str = "",
    at_least: int = 0,
) -> None:
    """Take ``turns`` turns, or turns until ``until()`` says stop (checked before each
    turn after the first ``at_least``).

    ``label`` tells one run of the agent from another: it seeds the messages and is part
    of each appended message's token, which must be unique in the tenant's thread.
    """
    rng = random.Random(f"{label}-{tenant}")
    n = 0
    while (turns is None or n < turns) and (until is None or n < at_least or not until()):
        said = " ".join(rng.choice(_WORDS) for _ in range(8))
        started = time.perf_counter()
        await _retried(
            ledger,
            "context",
            partial(store.context, user_id=tenant, session_id=session_of(tenant), query=said),
        )
        episode = Episode(user_id=tenant, session_id=session_of(tenant), input=said, output="ok")
        await _remember(store, ledger, tenant, episode)
        await _append(store, ledger, tenant, f"{tenant}#{label}{n}")
        ledger.turns.append((started, time.perf_counter() - started))
        n += 1


async def check(engine: AsyncEngine, ledger: Ledger, tenants: list[str]) -> list[str]:
    """What each tenant holds against the ledger: every problem found, as a sentence."""
    problems = [f"never succeeded: {call}" for call in ledger.given_up]
    async with engine.connect() as conn:
        for tenant in tenants:
            ids = (
                await conn.execute(
                    text("SELECT id FROM episodes WHERE user_id = :u AND session_id = :s"),
                    {"u": tenant, "s": session_of(tenant)},
                )
            ).scalars()
            stored = Counter(str(i) for i in ids)
            expected = Counter(ledger.remembered.get(tenant, []))
            if stored != expected:
                problems.append(
                    f"{tenant}: episodes lost {sorted((expected - stored).elements())}, "
                    f"extra {sorted((stored - expected).elements())}"
                )
            rows = (
                await conn.execute(
                    text(
                        "SELECT slot_index, payload FROM slots "
                        "WHERE user_id = :u AND thread_id = :t ORDER BY slot_index"
                    ),
                    {"u": tenant, "t": thread_of(tenant)},
                )
            ).all()
            problems += _slot_problems(tenant, rows, ledger)
    return problems


def _slot_problems(tenant: str, rows: list[Any], ledger: Ledger) -> list[str]:
    """Positions gap-free; each appended message once, in order. A second copy of a message
    is not a problem when an attempt of it failed (the failed call's commit had landed):
    it is listed in ``ledger.landed_failed``."""
    import json

    problems = []
    appended = ledger.appended.get(tenant, [])
    indexes = [int(r[0]) for r in rows]
    first = indexes[0] if indexes else 0
    if indexes != list(range(first, first + len(indexes))):
        problems.append(f"{tenant}: slot positions not gap-free: {indexes}")
    payloads = [json.loads(r[1]) if isinstance(r[1], str) else r[1] for r in rows]
    tokens = [str(p.get("token")) if isinstance(p, dict) else repr(p) for p in payloads]
    stored, expected = Counter(tokens), Counter(appended)
    extra = stored - expected
    for token, copies in list(extra.items()):
        if token in expected and copies <= ledger.failed_appends[token]:
            ledger.landed_failed += [token] * copies
            del extra[token]
    lost = expected - stored
    if lost or extra:
        problems.append(
            f"{tenant}: slots lost {sorted(lost.elements())}, extra {sorted(extra.elements())}"
        )
    elif list(dict.fromkeys(tokens)) != appended:
        problems.append(f"{tenant}: slots out of order: {tokens} vs {appended}")
    return problems
