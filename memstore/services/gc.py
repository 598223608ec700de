"""Garbage collection: idle or surplus threads and expired working-memory keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from memstore.core.tenancy import TenantId, public_user_id
from memstore.db.unit import Database
from memstore.repositories.changes import ChangeLogRepository
from memstore.repositories.working_memory import WorkingMemoryRepository
from memstore.services.threads import ThreadBuffer
from memstore.types import GcReport

if TYPE_CHECKING:  # the unit of work's session, handed on to the repositories
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["collect", "prune_changes", "sweep_working_memory"]


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


async def collect(
    db: Database,
    threads_buffer: ThreadBuffer,
    *,
    user: TenantId | None,
    max_threads: int | None = None,
    idle_ttl_seconds: float | None = None,
    change_retention_seconds: float,
) -> GcReport:
    """Run thread GC and the working-memory sweep for one stored tenant id, or all (None)."""
    if user is None:
        threads = await threads_buffer.gc_all_tenants(
            max_threads=max_threads, idle_ttl_seconds=idle_ttl_seconds
        )
        expired = await sweep_working_memory(db, None)
        changes = await prune_changes(db, None, change_retention_seconds)
    else:
        threads = await threads_buffer.gc(
            user_id=public_user_id(user),
            max_threads=max_threads,
            idle_ttl_seconds=idle_ttl_seconds,
        )
        expired = await sweep_working_memory(db, [user])
        changes = await prune_changes(db, [user], change_retention_seconds)
    return GcReport(threads=tuple(threads), expired_keys=expired, pruned_changes=changes)
