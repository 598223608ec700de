"""Wake-up hints for waiters on committed changes: one watcher per store.

A hint only says "look again": waiters (``threads.wait``, ``store.changes``)
then read what they wait for with a tenant-filtered query, so a lost, late or
spurious hint costs latency, never correctness. The payload is an opaque
per-tenant token (see :func:`hint_of`), never the user id.

How commits of other connections are seen is the backend's
(:meth:`~memstore.dialects.Dialect.watch_changes`: a listening connection, or a
poll of the database's version); commits of this process wake the tenant's
waiters at once (:meth:`ChangeSignal.notify_local`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
from collections.abc import AsyncIterator, Iterable

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.dialects import dialect_for
from memstore.errors import Unavailable
from memstore.telemetry import span, waiter_added, woken

__all__ = [
    "CHANNEL",
    "HINTS_KEY",
    "HINT_SQL",
    "ChangeSignal",
    "Waiter",
    "hint_of",
]

# The channel a backend that notifies sends hints on.
CHANNEL = "memstore_changes"
# Session.info entry: hints of the changes a write transaction recorded, for the
# waiters of this process once it commits (memstore.db.unit).
HINTS_KEY = "memstore_change_hints"


# The same digest computed by the database, for a statement that sends the hint
# itself ({epoch}: the SQL expression of the epoch); SHA-256, which PostgreSQL has.
HINT_SQL = "left(encode(sha256(convert_to('mshint:' || {epoch}, 'UTF8')), 'hex'), 16)"


def hint_of(epoch: str) -> str:
    """The notification payload of a tenant: a digest of its change-log epoch.

    The epoch is random and known only to readers of that tenant's rows, so the
    payload tells a listener outside this library nothing about who changed.
    Equal to :data:`HINT_SQL` evaluated by the database.
    """
    return hashlib.sha256(f"mshint:{epoch}".encode()).hexdigest()[:16]


class Waiter:
    """One waiting call's registration; wakes on its tenant's hint (or any, until it knows it)."""

    def __init__(self, signal: ChangeSignal) -> None:
        self._signal = signal
        self._event = asyncio.Event()
        self.hint: str | None = None  # None: wake on every hint

    def listen_for(self, hint: str | None) -> None:
        """Narrow (or widen, None) the hints that wake this waiter."""
        if hint != self.hint:
            self._signal.rekey(self, hint)

    def wake(self) -> None:
        if not self._event.is_set():
            self._signal.wakeups += 1
            woken(1)
        self._event.set()

    async def wait(self, seconds: float | None) -> bool:
        """Sleep until woken (True) or ``seconds`` pass (False, None: never); clears the wake."""
        self._signal.sleeping += 1
        waiter_added(1)
        try:
            with span("memstore.changes.wait") as current:
                try:
                    async with asyncio.timeout(seconds):
                        await self._event.wait()
                except TimeoutError:
                    woke = False
                else:
                    woke = True
                if current is not None:
                    current.set_attribute("memstore.woken", woke)
            if not woke:
                return False
        finally:
            self._signal.sleeping -= 1
            waiter_added(-1)
            self._event.clear()
        self._signal.check_open()
        return True


class ChangeSignal:
    """The wake-up hints of one store (shared by its :class:`~memstore.db.unit.Database` views)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._by_hint: dict[str | None, set[Waiter]] = {}
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._has_waiters = asyncio.Event()
        self.closed = False
        # Observability (and the tests): listening / polling connections open now
        # (0 or 1), reconnections, waiters asleep now, wake-ups delivered to waiters.
        self.connections = 0
        self.reconnects = 0
        self.sleeping = 0
        self.wakeups = 0
        self.polls = 0  # SQLite: data_version reads so far
        # Postgres: the latest payloads received (opaque digests), for diagnostics.
        self.recent: collections.deque[str] = collections.deque(maxlen=256)

    # ---- waiters ------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def waiting(self, seconds: float | None = None) -> AsyncIterator[Waiter]:
        """A registered :class:`Waiter` that wakes on every hint until narrowed.

        Registered *before* the caller's first read, and the listener is
        listening before this yields (or ``seconds`` passed), so a change
        committed after that read is never missed.
        """
        self.check_open()
        waiter = Waiter(self)
        self._by_hint.setdefault(None, set()).add(waiter)
        self._has_waiters.set()
        try:
            await self._ready(seconds)
            yield waiter
        finally:
            self._drop(waiter)

    def rekey(self, waiter: Waiter, hint: str | None) -> None:
        self._drop(waiter)
        waiter.hint = hint
        self._by_hint.setdefault(hint, set()).add(waiter)
        self._has_waiters.set()

    def _drop(self, waiter: Waiter) -> None:
        group = self._by_hint.get(waiter.hint)
        if group is not None:
            group.discard(waiter)
            if not group:
                del self._by_hint[waiter.hint]
        if not self._by_hint:
            self._has_waiters.clear()

    @property
    def waiter_count(self) -> int:
        return sum(len(g) for g in self._by_hint.values())

    def notify_local(self, hints: Iterable[str]) -> None:
        """Wake this process's waiters of ``hints`` (after a commit made here)."""
        for hint in set(hints):
            self._wake(hint)

    def _wake(self, hint: str) -> None:
        for key in (hint, None):
            for waiter in self._by_hint.get(key, ()):
                waiter.wake()

    def _wake_all(self) -> None:
        for group in self._by_hint.values():
            for waiter in group:
                waiter.wake()

    # ---- what a backend's watcher (Dialect.watch_changes) uses ----------------------

    @property
    def has_waiters(self) -> bool:
        return self._has_waiters.is_set()

    async def until_waiters(self) -> None:
        """Return once someone waits."""
        await self._has_waiters.wait()

    def watching(self, *, now: bool) -> None:
        """Say whether commits are being watched now: ``waiting`` returns once they are."""
        if now:
            self._connected.set()
        else:
            self._connected.clear()

    def wake(self, hint: str) -> None:
        """Wake the waiters of ``hint`` (and those that wait on every hint)."""
        self._wake(hint)

    def wake_all(self) -> None:
        """Wake every waiter: something may have changed that no hint named."""
        self._wake_all()

    def check_open(self) -> None:
        if self.closed:
            raise Unavailable("the store was closed while waiting for changes")

    # ---- the listening connection ---------------------------------------------------

    async def _ready(self, seconds: float | None) -> None:
        """Start the listener if needed; wait (at most ``seconds``) until it listens."""
        if self._task is None or self._task.done():
            watch = dialect_for(self.engine).watch_changes(self)
            self._task = asyncio.get_running_loop().create_task(watch, name="memstore-signal")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._connected.wait()

    async def close(self) -> None:
        """Stop listening and close the connection; waiters raise :class:`Unavailable`."""
        self.closed = True
        self._wake_all()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
