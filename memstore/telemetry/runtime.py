"""Connection permits, the change feed's waiters and the consolidation queue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from memstore.telemetry._state import tracer
from memstore.telemetry.instruments import instruments
from memstore.telemetry.spans import event, span

__all__ = [
    "acquire_permit",
    "backlog",
    "consolidated",
    "delivered",
    "metrics_on",
    "release_permit",
    "waiter_added",
    "woken",
]


async def acquire_permit(gate: asyncio.Semaphore | asyncio.Lock, backend: str) -> bool:
    """Take ``gate``: a connection permit (a semaphore) or SQLite's write lock; a wait for
    it is a span (``memstore.pool.wait`` / ``memstore.write_lock.wait``). True when the
    permit was counted as a used connection (hand it to :func:`release_permit`)."""
    pool = isinstance(gate, asyncio.Semaphore)
    metrics = instruments() if pool else None
    waits = gate.locked()
    if waits and metrics is not None:
        metrics.add("db.client.connection.pending_requests", 1, {"db.system.name": backend})
    try:
        if waits and tracer() is not None:
            name = "memstore.pool.wait" if pool else "memstore.write_lock.wait"
            with span(name, {"db.system.name": backend}):
                await gate.acquire()
        else:
            await gate.acquire()
    finally:
        if waits and metrics is not None:
            metrics.add("db.client.connection.pending_requests", -1, {"db.system.name": backend})
    if metrics is not None:
        metrics.add("db.client.connection.count", 1, _used(backend))
    return metrics is not None


def release_permit(gate: asyncio.Semaphore | asyncio.Lock, backend: str, counted: bool) -> None:
    gate.release()
    metrics = instruments()
    if counted and metrics is not None:
        metrics.add("db.client.connection.count", -1, _used(backend))


def _used(backend: str) -> dict[str, str]:
    return {"db.system.name": backend, "db.client.connection.state": "used"}


def waiter_added(delta: int) -> None:
    """A change-feed or thread waiter started (+1) or ended (-1)."""
    metrics = instruments()
    if metrics is not None:
        metrics.add("memstore.changes.waiters", delta, {})


def woken(count: int) -> None:
    """``count`` waiters were woken by a change (an event on the span of the commit
    that woke them, when this process made it)."""
    if count <= 0:
        return
    metrics = instruments()
    if metrics is not None:
        metrics.add("memstore.changes.wakeups", count, {})
    event("memstore.wakeup", {"memstore.woken": count})


def delivered(committed: datetime, now: Callable[[], datetime]) -> None:
    """A live consumer (``threads.wait`` / ``follow``, ``changes()``) got a batch whose
    newest item was committed at ``committed`` (the writer's clock): the feed's lag."""
    metrics = instruments()
    if metrics is not None:
        lag = max(0.0, (now() - committed).total_seconds())
        metrics.record("memstore.changes.lag", lag, {})


def metrics_on() -> bool:
    """Whether an SDK meter provider listens (work done only to be measured can skip)."""
    return instruments() is not None


def consolidated(episodes: int) -> None:
    """A consolidation batch committed ``episodes`` episodes."""
    metrics = instruments()
    if metrics is not None and episodes:
        metrics.add("memstore.consolidation.episodes", episodes, {})


def backlog(episodes: int) -> None:
    """Every tenant's episodes still waiting for consolidation, counted now."""
    metrics = instruments()
    if metrics is not None:
        metrics.set("memstore.consolidation.backlog", episodes, {})
