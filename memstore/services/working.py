"""Working memory, garbage collection and the consolidation entry point."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from memstore.core.tenancy import TenantId, storage_user_id
from memstore.core.validation import check_identifier
from memstore.embeddings.base import Embedder
from memstore.errors import InvalidInput
from memstore.search.settings import EmbedderGuard
from memstore.services.base import Service
from memstore.services.consolidation.consolidator import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_LEASE_SECONDS,
    Consolidator,
)
from memstore.services.consolidation.types import Extractor
from memstore.services.gc import collect
from memstore.services.limits import DEFAULT_CHANGE_RETENTION_SECONDS, check_positive_seconds
from memstore.services.threads import ThreadBuffer
from memstore.services.working_memory import WorkingMemory
from memstore.types import ConsolidationResult, GcReport, ScopeContext

__all__ = ["WorkingService"]


class WorkingService(Service):
    """Working memory, garbage collection and the consolidation entry point; the
    ``ConsolidationHost`` its consolidators write with (embedder, guard, clock)."""

    embedder: Embedder
    embedder_guard: EmbedderGuard
    threads: ThreadBuffer
    scratchpad_limit: int
    change_retention_seconds: float = DEFAULT_CHANGE_RETENTION_SECONDS

    def __post_init__(self) -> None:
        check_positive_seconds("change_retention_seconds", self.change_retention_seconds)

    def now(self) -> datetime:
        return self.db.now()

    def working_memory(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        agent_id: str | None = None,
        default_ttl_seconds: float | None = None,
    ) -> WorkingMemory:
        """Working memory of the scope project > agent instance > session given.

        Keys are isolated per full scope path and per tenant; at least one of
        ``project_id``, ``agent_id``, ``session_id`` is required.
        """
        for name, value in (
            ("project_id", project_id),
            ("agent_id", agent_id),
            ("session_id", session_id),
        ):
            if value is not None:
                check_identifier(name, value)
        scope = ScopeContext.build(project_id=project_id, agent_id=agent_id, session_id=session_id)
        if scope is None:
            raise InvalidInput("working memory needs a project_id, agent_id or session_id")
        return WorkingMemory(
            self.db,
            scope,
            user_id=user_id,
            default_ttl_seconds=default_ttl_seconds,
            scratchpad_limit=self.scratchpad_limit,
        )

    async def gc(
        self,
        *,
        user_id: str | None = None,
        max_threads: int | None = None,
        thread_idle_ttl_seconds: float | None = None,
    ) -> GcReport:
        """Collect one tenant's idle / surplus threads, expired working-memory keys and
        old change-log rows; returns what was removed.

        ``user_id`` is required (:class:`TenantRequired` without it). Threads idle
        (no append) for longer than the idle TTL go first, then all but the
        ``max_threads`` newest (by creation). The limits default to the store's
        configuration. :meth:`gc_all_tenants` collects every tenant.
        """
        return await self._collect(
            storage_user_id(user_id, operation="gc"), max_threads, thread_idle_ttl_seconds
        )

    async def gc_all_tenants(
        self, *, max_threads: int | None = None, thread_idle_ttl_seconds: float | None = None
    ) -> GcReport:
        """:meth:`gc` of every tenant, each in its own transaction: a cross-tenant,
        administrative operation (the ``memstore gc`` command without ``--user-id``)."""
        return await self._collect(None, max_threads, thread_idle_ttl_seconds)

    async def _collect(
        self, user: TenantId | None, max_threads: int | None, idle_ttl_seconds: float | None
    ) -> GcReport:
        return await collect(
            self.db,
            self.threads,
            user=user,
            max_threads=max_threads,
            idle_ttl_seconds=idle_ttl_seconds,
            change_retention_seconds=self.change_retention_seconds,
        )

    async def consolidate(
        self,
        limit: int | None = None,
        user_id: str | None = None,
        extractor: Extractor | None = None,
        *,
        batch_size: int | None = None,
        max_seconds: float | None = None,
    ) -> ConsolidationResult:
        """Turn one tenant's unconsolidated episodes into facts (rule extractor unless
        ``extractor``).

        ``user_id`` is required (:class:`TenantRequired` without it);
        :meth:`consolidate_all_tenants` consolidates every tenant. ``limit`` caps
        the episodes. Safe to run from several processes at once: each episode is
        consolidated exactly once (see :mod:`memstore.services.consolidation.consolidator`).
        """
        storage_user_id(user_id, operation="consolidate")
        consolidator = self.consolidator(extractor, batch_size=batch_size)
        return await consolidator.run(limit=limit, user_id=user_id, max_seconds=max_seconds)

    async def consolidate_all_tenants(
        self,
        limit: int | None = None,
        extractor: Extractor | None = None,
        *,
        batch_size: int | None = None,
        max_seconds: float | None = None,
    ) -> ConsolidationResult:
        """:meth:`consolidate` of every tenant: a cross-tenant, administrative operation
        (what the ``memstore consolidate`` job runs without ``--user-id``)."""
        consolidator = self.consolidator(extractor, batch_size=batch_size)
        return await consolidator.run(limit=limit, max_seconds=max_seconds)

    def consolidator(
        self,
        extractor: Extractor | None = None,
        *,
        batch_size: int | None = None,
        lease_seconds: float | None = None,
        worker_id: str | None = None,
        after_fact: Callable[[], Awaitable[None]] | None = None,
    ) -> Consolidator:
        """A consolidation worker on this store, for a long-running job.

        What :meth:`consolidate` runs once, kept: ``pending()`` counts the waiting
        episodes and ``run(on_batch=..., should_stop=...)`` reports each batch and
        stops between batches (``memstore consolidate --loop`` is one). Episodes are
        leased for ``lease_seconds`` to ``worker_id`` (default: host, pid, random).
        ``after_fact`` is awaited after each fact a batch writes, inside its
        transaction (fault-injection tests, ``--debug-write-delay``).
        """
        return Consolidator(
            self,
            extractor=extractor,
            batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
            lease_seconds=DEFAULT_LEASE_SECONDS if lease_seconds is None else lease_seconds,
            worker_id=worker_id,
            after_fact=after_fact,
        )
