"""SQLite: commits of other connections are seen through ``PRAGMA data_version``.

One dedicated connection reads ``data_version`` while someone waits; its value
changes when any other connection, of any process (this one included), commits.
Then every waiter of the store wakes and looks (SQLite cannot say who wrote).
Commits of this process also wake the tenant's waiters at once
(:meth:`ChangeSignal.notify_local`).

When to read it is the operating system's to say where it can: on Linux an
inotify instance on the database's files (memstore/backends/sqlite/inotify.py)
reports each write, and a read follows at once, then a few more shortly after
(the event can precede the commit it belongs to by the time the writer takes to
publish it). An event is only a hint, and so is its absence: a read every
:data:`SAFETY_INTERVAL_S` regardless means a lost event delays a wake-up, never
loses it, and changes that no event announced (a file system that reports no
writes, such as one shared over the network) turn the events off for the
polling below. Elsewhere, or when inotify is refused (no such call, the watch
or instance limit), the connection reads every :data:`POLL_INTERVAL_S`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

from memstore.backends.sqlite.inotify import DatabaseFiles
from memstore.db.signal import ChangeSignal

__all__ = ["POLL_INTERVAL_S", "SAFETY_INTERVAL_S", "watch"]

_log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.03
SAFETY_INTERVAL_S = 1.0
# Reads after an event that showed no new commit: the writer may not have
# published it yet. A new event starts the series again.
_FOLLOW_UP_S = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.25)
# Changes in a row that no event announced before the events are not trusted.
_UNANNOUNCED_LIMIT = 2
_BACKOFF_MIN_S = 0.05
_BACKOFF_MAX_S = 2.0

_told: set[str] = set()  # why the poll was chosen, said once per process at info


async def watch(signal: ChangeSignal) -> None:
    database = signal.engine.url.database or ""
    if database in ("", ":memory:") or "mode=memory" in database:
        # No other connection can see this database: only local commits wake.
        signal.watching(now=True)
        return
    import aiosqlite  # lazy: the SQLite driver, present whenever SQLite is used

    uri = database.startswith("file:")
    backoff = _BACKOFF_MIN_S
    while not signal.closed:
        try:
            async with aiosqlite.connect(database, uri=uri) as connection:
                signal.connections += 1
                try:
                    backoff = _BACKOFF_MIN_S
                    await _watch(signal, connection, _file_path(database))
                finally:
                    signal.connections -= 1
                    signal.watching(now=False)
        except Exception as exc:
            _log.warning("memstore: reading data_version failed (%s)", exc)
            signal.wake_all()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX_S)


async def _watch(signal: ChangeSignal, connection: Any, path: str | None) -> None:
    async def version() -> int:
        # One trip to the connection's thread (execute, fetch and close would be three).
        rows = await connection.execute_fetchall("PRAGMA data_version")
        signal.polls += 1
        return int(next(iter(rows))[0])

    # Watching starts before the first read, so no write after that read goes unreported.
    hints = _Hints.start(path) if path is not None else None
    try:
        last = await version()
        signal.watching(now=True)
        while not signal.closed:
            if not signal.has_waiters:
                # A commit while nobody waited is compared with the version last
                # seen, not absorbed: it may have come after a new waiter's read.
                await signal.until_waiters()
                if hints is not None:
                    hints.resumed()
            elif hints is None:
                await asyncio.sleep(POLL_INTERVAL_S)
            else:
                await hints.due()
            now = await version()
            changed, last = now != last, now
            if changed:
                signal.wake_all()
            if hints is not None and not hints.looked(changed=changed):
                hints.close()
                hints = None
    finally:
        if hints is not None:
            hints.close()


class _Hints:
    """Reads of ``data_version`` driven by inotify events, on the running loop."""

    def __init__(self, files: DatabaseFiles, path: str) -> None:
        self._files = files
        self._path = path
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._follow_ups: Iterator[float] = iter(())
        self.events = 0  # reads of the descriptor that brought news of the database
        self._events_at_change = 0
        self._unannounced = 0
        self._broken: str | None = None
        self._loop.add_reader(files.fileno(), self._on_readable)

    @classmethod
    def start(cls, path: str) -> _Hints | None:
        """Events for the database at ``path``, or None (and why, logged) to poll instead."""
        files = _file_events(path)
        if files is None:
            return None
        try:
            return cls(files, path)
        except (NotImplementedError, OSError, RuntimeError) as exc:  # a loop without add_reader
            files.close()
            _chose_poll(path, f"the event loop cannot watch a descriptor ({exc})")
            return None

    def _on_readable(self) -> None:
        try:
            news = self._files.read()
        except OSError as exc:
            self._broken = f"reading inotify events failed ({exc})"
            news = True  # look once more, then poll
        if news:
            self.events += 1
            self._event.set()

    def resumed(self) -> None:
        """Someone waits again: writes reported meanwhile get their follow-up reads."""
        if self._event.is_set():
            self._event.clear()
            self._follow_ups = iter(_FOLLOW_UP_S)

    async def due(self) -> None:
        """Until the next read is due: an event, a follow-up of one, or the safety read."""
        delay = next(self._follow_ups, SAFETY_INTERVAL_S)
        try:
            async with asyncio.timeout(delay):
                await self._event.wait()
        except TimeoutError:
            return
        self._event.clear()
        self._follow_ups = iter(_FOLLOW_UP_S)

    def looked(self, *, changed: bool) -> bool:
        """After a read: False once events can no longer be trusted (the caller polls)."""
        if changed:
            self._follow_ups = iter(())
            self._on_readable()  # events queued before the commit showed explain it
            announced = self.events != self._events_at_change
            self._events_at_change = self.events
            self._unannounced = 0 if announced else self._unannounced + 1
            if self._unannounced >= _UNANNOUNCED_LIMIT:
                self._broken = "commits were seen that no file event announced"
        if self._broken is not None:
            _chose_poll(self._path, self._broken)
            return False
        return True

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.remove_reader(self._files.fileno())
        self._files.close()


def _file_events(path: str) -> DatabaseFiles | None:
    """The chooser: an inotify watch on the database's files, or None to poll."""
    try:
        return DatabaseFiles(path)
    except OSError as exc:
        _chose_poll(path, f"inotify is not available ({exc})")
        return None


def _chose_poll(path: str, why: str) -> None:
    level = logging.DEBUG if why in _told else logging.INFO
    _told.add(why)
    _log.log(
        level,
        "memstore: SQLite waiters poll data_version every %.0f ms for %s: %s",
        POLL_INTERVAL_S * 1000,
        os.path.basename(path),
        why,
    )


def _file_path(database: str) -> str | None:
    """The file SQLite opens for ``database`` (a path or a ``file:`` URI), or None."""
    if database.startswith("file:"):
        parts = urlsplit(database)
        if parts.netloc not in ("", "localhost"):
            return None
        database = unquote(parts.path)
        if not database:
            return None
    # SQLite follows symbolic links to the database; its -wal lies beside the target.
    return os.path.realpath(database)
