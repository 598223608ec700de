"""Working memory, garbage collection and the consolidation entry point."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from memstore.core.tenancy import storage_user_id
from memstore.core.validation import check_identifier
from memstore.db.unit import Database
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

__all__ = ["ConsolidationParts", "WorkingService"]


@dataclass(frozen=True)
class ConsolidationParts:
    """What a consolidator writes with: a ``ConsolidationHost`` made of the store's parts."""

    db: Database
    embedder: Embedder
    embedder_guard: EmbedderGuard

    def now(self) -> datetime:
        return self.db.now()


class WorkingService(Service):
    """Working memory, garbage collection and the consolidation entry point."""

    threads: ThreadBuffer
    scratchpad_limit: int
    consolidation: ConsolidationParts
    change_retention_seconds: float = DEFAULT_CHANGE_RETENTION_SECONDS

    def __post_init__(self) -> None:
        check_positive_seconds("change_retention_seconds", self.change_retention_seconds)

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
        all_tenants: bool = False,
        max_threads: int | None = None,
        thread_idle_ttl_seconds: float | None = None,
    ) -> GcReport:
        """Collect idle / surplus threads, expired working-memory keys and old change-log rows.

        One tenant (``user_id``, None = anonymous) or, with ``all_tenants=True``,
        every tenant, each in its own transaction. The limits default to the
        store's configuration. Returns what was removed.
        """
        if all_tenants and user_id is not None:
            raise InvalidInput("pass either user_id or all_tenants=True, not both")
        user = None if all_tenants else storage_user_id(user_id)
        return await collect(
            self.db,
            self.threads,
            user=user,
            max_threads=max_threads,
            idle_ttl_seconds=thread_idle_ttl_seconds,
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
        """Turn unconsolidated episodes into facts (rule extractor unless ``extractor``).

        ``user_id=None`` consolidates every tenant; ``limit`` caps the episodes.
        Safe to run from several processes at once: each episode is consolidated
        exactly once (see :mod:`memstore.services.consolidation.consolidator`).
        """
        size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        consolidator = self.consolidator(extractor, batch_size=size)
        return await consolidator.run(limit=limit, user_id=user_id, max_seconds=max_seconds)

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
            self.consolidation,
            extractor=extractor,
            batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
            lease_seconds=DEFAULT_LEASE_SECONDS if lease_seconds is None else lease_seconds,
            worker_id=worker_id,
            after_fact=after_fact,
        )
