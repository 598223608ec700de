"""Wake-up hints for waiters on committed changes: one listening connection per store.

A hint only says "look again": waiters (``threads.wait``, ``store.changes``)
then read what they wait for with a tenant-filtered query, so a lost, late or
spurious hint costs latency, never correctness.

- Postgres: the writing transaction calls ``pg_notify`` (delivered only if it
  commits). One dedicated asyncpg connection per store ``LISTEN``s, opened on
  the first waiter and closed with the store; it dispatches in-process to the
  waiters of the hint's tenant. The payload is an opaque per-tenant token (see
  :func:`hint_of`), never the user id. After the connection is lost it
  reconnects with backoff and wakes every waiter, since notifications sent in
  the gap are gone.
- SQLite: one dedicated connection polls ``PRAGMA data_version`` every
  :data:`POLL_INTERVAL_S` while someone waits; its value changes when any other
  connection, of any process, commits. Every waiter of the store wakes and
  looks. Commits of this process also wake the tenant's waiters at once
  (:meth:`ChangeSignal.notify_local`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.db.connections import connect_args_of, connect_postgres
from memstore.dialects import dialect_for
from memstore.errors import Unavailable

__all__ = [
    "CHANNEL",
    "HINTS_KEY",
    "LISTENER_APPLICATION_NAME",
    "POLL_INTERVAL_S",
    "ChangeSignal",
    "Waiter",
    "hint_of",
]

_log = logging.getLogger(__name__)

CHANNEL = "memstore_changes"
# The listening connection's application_name, so an operator (and the tests)
# can find it in pg_stat_activity.
LISTENER_APPLICATION_NAME = "memstore-listener"
POLL_INTERVAL_S = 0.03
# Session.info entry: hints of the changes a write transaction recorded, for the
# waiters of this process once it commits (memstore.db.unit).
HINTS_KEY = "memstore_change_hints"
# How often the idle listening connection is checked to be alive: a server that
# vanished without closing the socket sends no termination.
_KEEPALIVE_S = 5.0
_BACKOFF_MIN_S = 0.05
_BACKOFF_MAX_S = 2.0
_CONNECT_TIMEOUT_S = 10.0


def hint_of(epoch: str) -> str:
    """The notification payload of a tenant: a digest of its change-log epoch.

    The epoch is random and known only to readers of that tenant's rows, so the
    payload tells a listener outside this library nothing about who changed.
    """
    return hashlib.blake2b(epoch.encode(), digest_size=8, person=b"mshint").hexdigest()


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
        self._event.set()

    async def wait(self, seconds: float | None) -> bool:
        """Sleep until woken (True) or ``seconds`` pass (False, None: never); clears the wake."""
        self._signal.sleeping += 1
        try:
            async with asyncio.timeout(seconds):
                await self._event.wait()
        except TimeoutError:
            return False
        finally:
            self._signal.sleeping -= 1
            self._event.clear()
        self._signal.check_open()
        return True


class ChangeSignal:
    """The wake-up hints of one store (shared by its :class:`~memstore.db.unit.Database` views)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        # Commits wake listeners by NOTIFY, or are seen by polling the database.
        self._notifies = dialect_for(engine).notifies
        self._by_hint: dict[str | None, set[Waiter]] = {}
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._has_waiters = asyncio.Event()
        self._closed = False
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

    def check_open(self) -> None:
        if self._closed:
            raise Unavailable("the store was closed while waiting for changes")

    # ---- the listening connection ---------------------------------------------------

    async def _ready(self, seconds: float | None) -> None:
        """Start the listener if needed; wait (at most ``seconds``) until it listens."""
        if self._task is None or self._task.done():
            run = self._listen_postgres if self._notifies else self._poll_sqlite
            self._task = asyncio.get_running_loop().create_task(run(), name="memstore-signal")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._connected.wait()

    async def _listen_postgres(self) -> None:
        backoff = _BACKOFF_MIN_S
        while not self._closed:
            try:
                connection = await self._connect_postgres()
            except Exception as exc:  # a server that is down: keep trying, waiters time out
                _log.warning("memstore: cannot LISTEN (%s); retrying in %.2fs", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
                continue
            backoff = _BACKOFF_MIN_S
            self.connections += 1
            try:
                await self._serve(connection)
            finally:
                self.connections -= 1
                self._connected.clear()
                with contextlib.suppress(Exception):
                    await asyncio.shield(connection.close(timeout=1.0))
                # Whatever was notified while no one listened is lost: everyone looks.
                self._wake_all()
            if not self._closed:
                self.reconnects += 1

    async def _connect_postgres(self) -> Any:
        args, params = self._engine.dialect.create_connect_args(self._engine.url)
        # The pool's own arguments (TLS, connect timeout, the URL's settings).
        params.update(connect_args_of(self._engine))
        params.setdefault("timeout", _CONNECT_TIMEOUT_S)
        for dialect_only in ("async_creator_fn", "prepared_statement_cache_size"):
            params.pop(dialect_only, None)
        settings = dict(params.pop("server_settings", None) or {})
        settings["application_name"] = LISTENER_APPLICATION_NAME
        return await connect_postgres(*args, **params, server_settings=settings)

    async def _serve(self, connection: Any) -> None:
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _c: lost.set())

        def on_notify(_c: Any, _pid: int, _channel: str, payload: str) -> None:
            self.recent.append(payload)
            self._wake(payload)

        await connection.add_listener(CHANNEL, on_notify)
        self._connected.set()
        # After a reconnect, what was notified in the gap is lost: everyone looks
        # again (after the first connect, waiters registered meanwhile look once more).
        self._wake_all()
        while not self._closed and not lost.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_KEEPALIVE_S):
                    await lost.wait()
                    return
            try:
                await connection.fetchval("SELECT 1", timeout=_KEEPALIVE_S)
            except Exception:
                return

    async def _poll_sqlite(self) -> None:
        database = self._engine.url.database or ""
        if database in ("", ":memory:") or "mode=memory" in database:
            # No other connection can see this database: only local commits wake.
            self._connected.set()
            return
        import aiosqlite  # lazy: the SQLite driver, present whenever SQLite is used

        uri = database.startswith("file:")
        backoff = _BACKOFF_MIN_S
        while not self._closed:
            try:
                async with aiosqlite.connect(database, uri=uri) as connection:
                    self.connections += 1
                    try:
                        backoff = _BACKOFF_MIN_S
                        await self._poll(connection)
                    finally:
                        self.connections -= 1
                        self._connected.clear()
            except Exception as exc:
                _log.warning("memstore: polling data_version failed (%s)", exc)
                self._wake_all()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)

    async def _poll(self, connection: Any) -> None:
        async def version() -> int:
            async with connection.execute("PRAGMA data_version") as cursor:
                row = await cursor.fetchone()
            self.polls += 1
            return int(row[0])

        last = await version()
        self._connected.set()
        while not self._closed:
            if not self._has_waiters.is_set():
                await self._has_waiters.wait()
                # Nobody watched for a while; what changed then they read themselves.
                last = await version()
                continue
            await asyncio.sleep(POLL_INTERVAL_S)
            now = await version()
            if now != last:
                last = now
                self._wake_all()

    async def close(self) -> None:
        """Stop listening and close the connection; waiters raise :class:`Unavailable`."""
        self._closed = True
        self._wake_all()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
