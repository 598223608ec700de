"""Garbage collection: idle or surplus threads and expired working-memory keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstore.repositories.working_memory import WorkingMemoryRepository
from memstore.slots import RemovedThread

if TYPE_CHECKING:
    from memstore.store import MemoryStore

__all__ = ["GcReport", "collect", "sweep_working_memory"]


@dataclass(frozen=True, kw_only=True)
class GcReport:
    """What one garbage collection removed."""

    threads: tuple[RemovedThread, ...]
    expired_keys: int

    @property
    def slots(self) -> int:
        return sum(t.slot_count for t in self.threads)


async def sweep_working_memory(store: MemoryStore, users: list[str] | None) -> int:
    """Delete expired working-memory keys of ``users`` (stored ids; None = every tenant)."""
    now = store.now()
    if users is None:
        async with store._read() as session:
            users = await WorkingMemoryRepository(session=session).tenants_with_expired(now)
    removed = 0
    for user in users:
        # One short transaction per tenant: never a long lock, never a cross-tenant DELETE.
        async with store._write(user) as session:
            removed += await WorkingMemoryRepository(session=session).sweep(user, now)
    return removed


async def collect(
    store: MemoryStore,
    *,
    user: str | None,
    max_threads: int | None = None,
    idle_ttl_seconds: float | None = None,
) -> GcReport:
    """Run thread GC and the working-memory sweep for one stored tenant id, or all (None)."""
    if user is None:
        threads = await store.threads.gc_all_tenants(
            max_threads=max_threads, idle_ttl_seconds=idle_ttl_seconds
        )
        expired = await sweep_working_memory(store, None)
    else:
        from memstore.tenancy import public_user_id

        threads = await store.threads.gc(
            user_id=public_user_id(user),
            max_threads=max_threads,
            idle_ttl_seconds=idle_ttl_seconds,
        )
        expired = await sweep_working_memory(store, [user])
    return GcReport(threads=tuple(threads), expired_keys=expired)
