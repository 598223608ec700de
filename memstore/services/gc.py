"""Garbage collection: idle or surplus threads and expired working-memory keys."""

from __future__ import annotations

from datetime import timedelta

from memstore.core.tenancy import TenantId, public_user_id
from memstore.db.unit import Database
from memstore.repositories.changes import ChangeLogRepository
from memstore.repositories.working_memory import WorkingMemoryRepository
from memstore.services.threads import ThreadBuffer
from memstore.types import GcReport

__all__ = ["collect", "prune_changes", "sweep_working_memory"]


async def sweep_working_memory(db: Database, users: list[TenantId] | None) -> int:
    """Delete expired working-memory keys of ``users`` (stored ids; None = every tenant)."""
    now = db.now()
    if users is None:
        async with db.read() as session:
            users = await WorkingMemoryRepository(session=session).tenants_with_expired(now)
    removed = 0
    for user in users:
        # One short transaction per tenant: never a long lock, never a cross-tenant DELETE.
        async with db.write(user) as session:
            removed += await WorkingMemoryRepository(session=session).sweep(user, now)
    return removed


async def prune_changes(db: Database, users: list[TenantId] | None, retention: float) -> int:
    """Delete change-log rows older than ``retention`` seconds (of ``users``; None = all)."""
    cutoff = db.now() - timedelta(seconds=retention)
    if users is None:
        async with db.read() as session:
            users = await ChangeLogRepository(session=session).tenants_with_changes_before(cutoff)
    removed = 0
    for user in users:
        async with db.write(user) as session:
            removed += await ChangeLogRepository(session=session).prune(user, cutoff)
    return removed


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
