"""Waiting for a tenant's next committed change: read, sleep on the hint, read again.

Shared by ``threads.wait`` / ``threads.follow`` and ``store.changes``. The
waiter is registered with the store's signal (memstore.db.signal) before the
first read, so a change committed after any read wakes it; what it returns is
always what a tenant-filtered read found, never anything the hint carried.
While the database is unreachable (a Postgres restart) reads are retried,
woken by the listener's reconnect, until the deadline.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from memstore.core.tenancy import TenantId
from memstore.db.signal import Waiter
from memstore.db.unit import Database, Reader
from memstore.errors import InvalidInput, Unavailable
from memstore.repositories.changes import ChangeHead, ChangeLogRepository, read_head

__all__ = ["MAX_WAIT_SECONDS", "TenantWatch", "check_timeout", "watching"]

R = TypeVar("R")

MAX_WAIT_SECONDS = 365 * 86_400.0
# While the database is unreachable, how often a waiter tries to read again
# (sooner when the listener reconnects and wakes it).
_RETRY_S = 0.5

# (the read transaction's session, the tenant's change-log head) -> result or None.
Read = Callable[[Any, ChangeHead | None], Awaitable[R | None]]
# A read that is single statements and needs no head: (reader) -> result or None.
Find = Callable[[Reader], Awaitable[R | None]]


def check_timeout(timeout: object) -> float | None:
    """A wait's timeout in seconds: None (no limit) or 0 <= t <= a year."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise InvalidInput("timeout must be a number of seconds or None")
    if not (0 <= timeout <= MAX_WAIT_SECONDS) or math.isnan(timeout):
        raise InvalidInput(f"timeout must be between 0 and {MAX_WAIT_SECONDS:.0f} seconds")
    return float(timeout)


class TenantWatch:
    """One waiting call of one tenant, until its deadline."""

    def __init__(self, db: Database, user: TenantId, waiter: Waiter, deadline: float | None):
        self._db = db
        self._user = user
        self._waiter = waiter
        self._deadline = deadline

    def _left(self) -> float | None:
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - asyncio.get_running_loop().time())

    async def until(self, read: Read[R]) -> R | None:
        """``read``'s first result that is not None, or None at the deadline.

        ``read`` runs in a read transaction after the tenant's change-log head.
        """

        async def attempt() -> tuple[R | None, ChangeHead | None]:
            async with self._db.read(self._user) as session:
                head = await ChangeLogRepository(session=session).head(self._user)
                return await read(session, head), head

        return await self._loop(attempt)

    async def until_found(self, find: Find[R]) -> R | None:
        """:meth:`until` for a ``find`` that needs no head and is single statements.

        Each runs by itself on an autocommit connection (no BEGIN / COMMIT
        round trips, no ORM session), and the head, needed only to narrow the
        hints that wake this waiter, is read only when ``find`` found nothing:
        a waiter woken for what it waits for holds it after one statement. The
        head read after ``find`` is no less safe than before it: the waiter is
        registered already, so a commit between the two wakes it.
        """

        async def attempt() -> tuple[R | None, ChangeHead | None]:
            async with self._db.statement(self._user) as reader:
                found = await find(reader)
                if found is not None:
                    return found, None
                return None, await read_head(reader, self._user)

        return await self._loop(attempt)

    async def _loop(
        self, attempt: Callable[[], Awaitable[tuple[R | None, ChangeHead | None]]]
    ) -> R | None:
        while True:
            try:
                result, head = await attempt()
            except Unavailable:
                left = self._left()
                if left == 0:
                    raise
                await self._waiter.wait(_RETRY_S if left is None else min(left, _RETRY_S))
                continue
            left = self._left()
            if result is not None or left == 0:
                return result
            # Only this tenant's hints wake it now (every hint while it has no log yet).
            self._waiter.listen_for(None if head is None else head.hint)
            await self._waiter.wait(left)


@asynccontextmanager
async def watching(
    db: Database, user: TenantId, seconds: float | None, *, what: str
) -> AsyncIterator[TenantWatch]:
    """A :class:`TenantWatch` of the call ``what``, whose deadline is ``seconds`` from now
    (None: none). Refused on a store bound to a caller's transaction."""
    db.refuse_joined(
        what,
        "it waits for changes other transactions commit, while your open transaction "
        "would show it its own uncommitted rows as changes and stay open as it sleeps "
        "(on SQLite holding the write lock the other writers need)",
    )
    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    async with db.signal.waiting(seconds) as waiter:
        yield TenantWatch(db, user, waiter, deadline)
