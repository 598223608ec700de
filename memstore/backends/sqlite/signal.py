"""SQLite: commits of other connections are seen by polling ``PRAGMA data_version``.

One dedicated connection polls every :data:`POLL_INTERVAL_S` while someone waits;
its value changes when any other connection, of any process, commits. Every waiter
of the store wakes and looks. Commits of this process wake the tenant's waiters at
once (:meth:`ChangeSignal.notify_local`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from memstore.db.signal import ChangeSignal

__all__ = ["POLL_INTERVAL_S", "poll"]

_log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.03
_BACKOFF_MIN_S = 0.05
_BACKOFF_MAX_S = 2.0


async def poll(signal: ChangeSignal) -> None:
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
                    await _poll(signal, connection)
                finally:
                    signal.connections -= 1
                    signal.watching(now=False)
        except Exception as exc:
            _log.warning("memstore: polling data_version failed (%s)", exc)
            signal.wake_all()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX_S)


async def _poll(signal: ChangeSignal, connection: Any) -> None:
    async def version() -> int:
        async with connection.execute("PRAGMA data_version") as cursor:
            row = await cursor.fetchone()
        signal.polls += 1
        return int(row[0])

    last = await version()
    signal.watching(now=True)
    while not signal.closed:
        if not signal.has_waiters:
            await signal.until_waiters()
            # Nobody watched for a while; what changed then they read themselves.
            last = await version()
            continue
        await asyncio.sleep(POLL_INTERVAL_S)
        now = await version()
        if now != last:
            last = now
            signal.wake_all()
