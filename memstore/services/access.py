"""Access tracking: buffered counters of what an agent recalls and loads.

Recording an access is a dictionary update in memory; the counts reach the
database in one upsert per ``flush_every`` events (in a background task, so
the recall that triggered it does not wait), when the store closes, or when
someone reads the counters. A crash loses at most the buffered increments,
which is acceptable for a ranking prior.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from memstore.core.tenancy import TenantId, storage_user_id
from memstore.core.validation import check_limit
from memstore.db.unit import Database
from memstore.errors import InvalidInput
from memstore.repositories.access import AccessDelta, AccessRepository
from memstore.repositories.erasure import guard_against_erasure
from memstore.services.base import Service
from memstore.services.limits import ACCESS_KINDS
from memstore.types import AccessStat

__all__ = ["AccessService", "AccessTracker"]

log = logging.getLogger(__name__)

# Beyond this many distinct buffered items (e.g. the database is down) new
# increments are dropped rather than letting memory grow without bound.
_MAX_PENDING_ITEMS = 100_000


Key = tuple[str, str, str]  # (stored user id, kind, item id)


class AccessTracker:
    """Per-store buffer of access increments, flushed in batches."""

    def __init__(
        self,
        db: Database,
        *,
        flush_every: int = 256,
    ) -> None:
        self._db = db
        self.flush_every = flush_every
        self._pending: dict[Key, tuple[int, datetime]] = {}
        self._events = 0
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._muted: ContextVar[bool] = ContextVar(
            f"memstore_access_muted_{id(self)}", default=False
        )

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Do not count accesses made inside this block (by this task)."""
        token = self._muted.set(True)
        try:
            yield
        finally:
            self._muted.reset(token)

    def record(self, user_id: str, kind: str, item_ids: Iterable[str], now: datetime) -> None:
        """Count one access of each item; never touches the database itself."""
        if self._muted.get():
            return
        for item_id in item_ids:
            if not item_id:
                continue
            key = (user_id, kind, item_id)
            count, _ = self._pending.get(key, (0, now))
            if count == 0 and len(self._pending) >= _MAX_PENDING_ITEMS:
                continue
            self._pending[key] = (count + 1, now)
            self._events += 1
        if self._events >= self.flush_every and (self._task is None or self._task.done()):
            self._events = 0
            self._task = asyncio.get_running_loop().create_task(self._background_flush())

    def pending(self, user_id: str, kind: str, item_ids: Iterable[str]) -> dict[str, int]:
        """Buffered (not yet flushed) counts of the given items."""
        out: dict[str, int] = {}
        for item_id in item_ids:
            entry = self._pending.get((user_id, kind, item_id))
            if entry is not None:
                out[item_id] = entry[0]
        return out

    async def discard(self, user_id: str, *, wait: bool = True) -> None:
        """Drop buffered increments of a tenant (its memory is being erased).

        Waits for a flush in flight first, so it cannot write them back after
        the erase. ``wait=False`` for an erase in a caller's transaction, which
        that flush may be waiting for (its locks, SQLite's write lock): the
        flush then writes only counts of items that still exist, read under
        the erasure guard.
        """
        task = self._task
        if wait and task is not None and not task.done():
            await asyncio.gather(task, return_exceptions=True)
        for key in [k for k in self._pending if k[0] == user_id]:
            del self._pending[key]

    async def background_flush_done(self) -> bool:
        """Wait for a background flush in flight; False if none was started."""
        task = self._task
        if task is None:
            return False
        await asyncio.gather(task, return_exceptions=True)
        return True

    async def _background_flush(self) -> None:
        try:
            await self.flush()
        except Exception:  # a ranking prior is not worth crashing the agent for
            log.warning("memstore: flushing access counts failed; will retry", exc_info=True)

    async def flush(self, db: Database | None = None) -> None:
        """Write every buffered increment in one transaction: of ``db`` if given
        (a bound store's view: the caller's transaction), else of the store."""
        if db is None or db is self._db:
            async with self._lock:
                await self._write(self._db)
        else:
            # Not queued behind a flush on the store's own connections: that one
            # may be waiting for locks the caller's transaction holds.
            await self._write(db)

    async def _write(self, db: Database) -> None:
        taken, self._pending = self._pending, {}
        self._events = 0
        if not taken:
            return
        deltas = [
            # Recorded by the services with ids they validated (storage_user_id).
            AccessDelta(user_id=TenantId(u), kind=k, item_id=i, count=c, last_accessed_at=at)
            for (u, k, i), (c, at) in taken.items()
        ]
        try:
            async with db.write() as session:
                # A forget of one of these tenants either finishes first (then
                # the upsert sees its items gone) or waits for this flush.
                await guard_against_erasure(session, {d.user_id for d in deltas})
                repo = AccessRepository(session=session)
                # Each tenant's part is named for the row-level security policies.
                for user in sorted({d.user_id for d in deltas}):
                    await db.set_tenant(session, user)
                    await repo.add([d for d in deltas if d.user_id == user])
        except BaseException:
            # Put the increments back so the next flush retries them.
            for key, (count, at) in taken.items():
                newer_count, newer_at = self._pending.get(key, (0, at))
                self._pending[key] = (count + newer_count, max(at, newer_at))
            raise

    async def close(self) -> None:
        """Wait for a running background flush, then flush what is left."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            await asyncio.gather(task, return_exceptions=True)
        try:
            await self.flush()
        except Exception:  # closing must not fail (or mask an error) over counters
            log.warning("memstore: access counts lost on close", exc_info=True)


class AccessService(Service):
    """The access counters as agents see them: record, read, flush."""

    access_tracker: AccessTracker

    def record_access(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> None:
        """Count one access of each item (buffered; written in batches)."""
        _check_kind(kind)
        user = storage_user_id(user_id)
        self.access_tracker.record(user, kind, [i for i in item_ids if i], self.db.now())

    async def flush_access(self) -> None:
        """Write buffered access counts now (also happens on close and every few hundred).

        On a store bound to a caller's session they are written in its
        transaction (a connection of the store's own would wait for that
        transaction's locks), so they are lost if it rolls back."""
        await self.access_tracker.flush(self.db)

    async def access_counts(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, int]:
        """Access counts of the given items, including not yet flushed ones."""
        user = storage_user_id(user_id)
        if not item_ids:
            return {}
        async with self.db.read(user) as session:
            counts = await AccessRepository(session=session).counts(user, kind, item_ids)
        for item_id, extra in self.access_tracker.pending(user, kind, item_ids).items():
            counts[item_id] = counts.get(item_id, 0) + extra
        return counts

    async def access_stats(
        self, *, user_id: str | None = None, kind: str | None = None, limit: int = 20
    ) -> list[AccessStat]:
        """The most-accessed items of a user (optionally of one kind), hottest first."""
        user = storage_user_id(user_id)
        if kind is not None:
            _check_kind(kind)
        check_limit("limit", limit)
        await self.flush_access()
        async with self.db.read(user) as session:
            return await AccessRepository(session=session).hottest(user, kind, limit)


def _check_kind(kind: str) -> None:
    if kind not in ACCESS_KINDS:
        raise InvalidInput(f"kind must be one of {sorted(ACCESS_KINDS)}")
