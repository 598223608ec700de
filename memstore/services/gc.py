"""Garbage collection: idle or surplus threads, expired working-memory keys, old changes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memstore.core.tenancy import TenantId, public_user_id
from memstore.core.validation import check_limit
from memstore.db.unit import Database
from memstore.repositories.changes import ChangeEntry, ChangeLogRepository
from memstore.repositories.threads import ThreadRepository
from memstore.repositories.working_memory import WorkingMemoryRepository
from memstore.services.limits import check_positive_seconds
from memstore.services.threads import MAX_LIMIT, ThreadBuffer
from memstore.types import ChangeKind, GcReport, RemovedThread

if TYPE_CHECKING:  # the unit of work's session, handed on to the repositories
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["collect", "collect_threads", "prune_changes", "sweep_working_memory"]


async def _per_tenant(
    db: Database,
    users: list[TenantId] | None,
    find: Callable[[AsyncSession], Awaitable[list[TenantId]]],
    delete: Callable[[AsyncSession, TenantId], Awaitable[int]],
) -> int:
    """``delete`` for each of ``users`` (None: the tenants ``find`` names); rows deleted.

    One short transaction per tenant: never a long lock, never a cross-tenant DELETE.
    """
    if users is None:
        async with db.read() as session:
            users = await find(session)
    removed = 0
    for user in users:
        async with db.write(user) as session:
            removed += await delete(session, user)
    return removed


async def sweep_working_memory(db: Database, users: list[TenantId] | None) -> int:
    """Delete expired working-memory keys of ``users`` (stored ids; None = every tenant)."""
    now = db.now()
    return await _per_tenant(
        db,
        users,
        lambda session: WorkingMemoryRepository(session=session).tenants_with_expired(now),
        lambda session, user: WorkingMemoryRepository(session=session).sweep(user, now),
    )


async def prune_changes(db: Database, users: list[TenantId] | None, retention: float) -> int:
    """Delete change-log rows older than ``retention`` seconds (of ``users``; None = all)."""
    cutoff = db.now() - timedelta(seconds=retention)
    return await _per_tenant(
        db,
        users,
        lambda session: ChangeLogRepository(session=session).tenants_with_changes_before(cutoff),
        lambda session, user: ChangeLogRepository(session=session).prune(user, cutoff),
    )


async def collect_threads(
    db: Database, user: TenantId, *, keep: int, cutoff: datetime | None
) -> list[RemovedThread]:
    """Delete one tenant's threads idle since ``cutoff``, then all but its ``keep`` newest."""
    async with db.write(user) as session:
        repo = ThreadRepository(session=session)
        idle = await repo.delete_idle(user, cutoff) if cutoff is not None else {}
        surplus = await repo.delete_beyond(user, keep)
        gone = [ChangeEntry(ChangeKind.THREAD_DELETED, t) for t in sorted({*idle, *surplus})]
        await ChangeLogRepository(session=session).record(user, gone, now=db.now())
    return [
        RemovedThread(thread_id=t, slot_count=n, reason=why, user_id=public_user_id(user))
        for why, removed in (("idle", idle), ("max_threads", surplus))
        for t, n in sorted(removed.items())
    ]


def _thread_limits(
    db: Database, threads: ThreadBuffer, max_threads: int | None, idle_ttl_seconds: float | None
) -> tuple[int, datetime | None]:
    """(threads kept per tenant, idle cutoff): the arguments, else the buffer's configuration."""
    keep = (
        threads.max_threads
        if max_threads is None
        else check_limit("max_threads", max_threads, maximum=MAX_LIMIT)
    )
    ttl = (
        threads.idle_ttl_seconds
        if idle_ttl_seconds is None
        else check_positive_seconds("idle_ttl_seconds", idle_ttl_seconds)
    )
    return keep, None if ttl is None else db.now() - timedelta(seconds=ttl)


async def collect(
    db: Database,
    threads_buffer: ThreadBuffer,
    *,
    user: TenantId | None,
    max_threads: int | None = None,
    idle_ttl_seconds: float | None = None,
    change_retention_seconds: float,
) -> GcReport:
    """Collect threads, expired working-memory keys and old changes of one stored tenant id,
    or of every tenant (None: the cross-tenant run, each tenant in its own transaction)."""
    keep, cutoff = _thread_limits(db, threads_buffer, max_threads, idle_ttl_seconds)
    if user is None:
        async with db.read() as session:
            tenants = await ThreadRepository(session=session).tenants_to_collect(
                max_threads=keep, cutoff=cutoff
            )
        threads: list[RemovedThread] = []
        for tenant in tenants:
            threads.extend(await collect_threads(db, tenant, keep=keep, cutoff=cutoff))
        expired = await sweep_working_memory(db, None)
        changes = await prune_changes(db, None, change_retention_seconds)
    else:
        threads = await collect_threads(db, user, keep=keep, cutoff=cutoff)
        expired = await sweep_working_memory(db, [user])
        changes = await prune_changes(db, [user], change_retention_seconds)
    return GcReport(threads=tuple(threads), expired_keys=expired, pruned_changes=changes)
