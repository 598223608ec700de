"""The consolidation job: claim episodes, extract facts, reconcile, mark — exactly once.

Three steps, the same on both databases, and nothing is held during the second:

1. **Claim**, in a short transaction: lease the tenant's oldest unconsolidated
   episodes (``claimed_by``, ``claim_expires_at``); a tenant with a live lease
   held by another worker is skipped, so one worker at a time reconciles a
   tenant's episodes in time order. On Postgres the claim first takes the
   tenant's transaction-scoped advisory lock (try, skip if taken), so it never
   races another worker's write of the same tenant.
2. **Extract** and embed with no transaction, no pooled connection and no
   lock held: an LLM may take half a minute.
3. **Write**, in a second transaction: (Postgres: wait for the tenant lock)
   take the tenant's erasure guard, keep only the episodes that still exist
   and are still leased to this worker, reconcile their facts and mark them
   consolidated.

A worker killed anywhere loses its uncommitted transaction; its lease expires
and the episodes are claimed again. A batch that fails releases its leases at
once. Erasure: the write takes the erasure guard
(:mod:`memstore.repositories.erasure`) before checking which episodes still
exist, so a ``forget(user_id=X)`` that ran meanwhile wins.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from memstore.core.documents import fact_text
from memstore.core.fact_input import valid_fact
from memstore.core.tenancy import TenantId, public_user_id, storage_user_id
from memstore.db.unit import Database
from memstore.embeddings.base import Embedder, embed_checked
from memstore.errors import InvalidInput
from memstore.repositories.consolidation import ConsolidationRepository
from memstore.repositories.erasure import guard_against_erasure
from memstore.search.settings import EmbedderGuard
from memstore.services.bitemporal import FactWriter
from memstore.services.consolidation.errors import ExtractionError
from memstore.services.consolidation.types import (
    CandidateFact,
    Extractor,
)
from memstore.telemetry import backlog, consolidated, metrics_on, span
from memstore.types import (
    AssertOutcome,
    BatchResult,
    ConsolidationResult,
    Episode,
    Fact,
    FactChange,
)

if TYPE_CHECKING:  # the unit of work's session, handed on to the repositories
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_LEASE_SECONDS", "Consolidator", "default_worker_id"]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 100
DEFAULT_LEASE_SECONDS = 300.0

# Called after each fact write inside the batch transaction (tests use it to be
# killed mid-batch deterministically).
FactHook = Callable[[], Awaitable[None]]
BatchHook = Callable[[BatchResult], None]


@dataclass(frozen=True)
class _Prepared:
    """A candidate validated as a fact, with its embedding."""

    fact: Fact
    single: bool
    valid_from: datetime
    embedding: npt.NDArray[np.float32]


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ConsolidationHost(Protocol):
    """What a consolidator writes with: the store's parts, given by
    :meth:`memstore.MemoryStore.consolidator`."""

    @property
    def db(self) -> Database: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def embedder_guard(self) -> EmbedderGuard: ...

    def now(self) -> datetime: ...


class Consolidator:
    """Runs batches of one tenant at a time (built by :meth:`memstore.MemoryStore.consolidator`)."""

    def __init__(
        self,
        parts: ConsolidationHost,
        *,
        extractor: Extractor | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        worker_id: str | None = None,
        after_fact: FactHook | None = None,
    ) -> None:
        from memstore.services.consolidation.rules import RuleExtractor

        if not isinstance(getattr(parts, "db", None), Database):
            raise InvalidInput("build a Consolidator with MemoryStore.consolidator(...)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput("batch_size must be a positive integer")
        if not (isinstance(lease_seconds, int | float) and lease_seconds > 0):
            raise InvalidInput("lease_seconds must be a positive number")
        self._parts = parts
        self.extractor: Extractor = extractor if extractor is not None else RuleExtractor()
        self.batch_size = batch_size
        self.lease = timedelta(seconds=float(lease_seconds))
        self.worker_id = worker_id or default_worker_id()
        self._after_fact = after_fact

    async def pending(self, user_id: str | None = None) -> int:
        """Episodes still waiting: of ``user_id``, or of every tenant when None."""
        user = None if user_id is None else storage_user_id(user_id)
        async with self._parts.db.write() as session:
            count = await ConsolidationRepository(session=session).count_pending(user)
        if user is None:
            backlog(count)
        return count

    async def run(
        self,
        *,
        limit: int | None = None,
        user_id: str | None = None,
        max_seconds: float | None = None,
        on_batch: BatchHook | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> ConsolidationResult:
        """Consolidate until the queue is empty, ``limit`` episodes, or ``max_seconds``.

        ``user_id`` restricts the run to one tenant; ``None`` means every tenant
        (the anonymous bucket included). A batch is never cut short:
        ``max_seconds`` and ``should_stop`` are checked between batches.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput("limit must be a non-negative integer or None")
        user = None if user_id is None else storage_user_id(user_id)
        with span("memstore.consolidation.run") as current:
            result = await self._run(user, limit, max_seconds, on_batch, should_stop)
            if current is not None:
                current.set_attributes(
                    {
                        "memstore.consolidation.processed": result.processed,
                        "memstore.consolidation.batches": result.batches,
                    }
                )
        if user is None and metrics_on():
            # The backlog every tenant has left: a cross-tenant count, so only after a
            # run that was cross-tenant itself.
            await self.pending()
        return result

    async def _run(
        self,
        user: TenantId | None,
        limit: int | None,
        max_seconds: float | None,
        on_batch: BatchHook | None,
        should_stop: Callable[[], bool] | None,
    ) -> ConsolidationResult:
        result = ConsolidationResult()
        started = time.monotonic()
        try:
            while limit is None or result.processed < limit:
                if max_seconds is not None and time.monotonic() - started >= max_seconds:
                    break
                if should_stop is not None and should_stop():
                    break
                size = (
                    self.batch_size
                    if limit is None
                    else min(self.batch_size, limit - result.processed)
                )
                batch = await self.run_batch(size, user)
                if batch is None:
                    break
                result.include(batch)
                if on_batch is not None:
                    on_batch(batch)
        finally:
            result.duration = time.monotonic() - started
        logger.info("consolidation run done (worker %s): %s", self.worker_id, result.summary())
        return result

    async def run_batch(self, size: int, user: TenantId | None = None) -> BatchResult | None:
        """One batch of one tenant (stored id ``user`` if given); None when nothing is free."""
        started = time.monotonic()
        try:
            with span("memstore.consolidation.batch") as current:
                batch = await self._batch(size, user)
                if current is not None and batch is not None:
                    current.set_attribute("memstore.consolidation.processed", batch.processed)
        except Exception as error:
            logger.warning(
                "consolidation batch failed after %.3f s (worker %s, extractor %s): %s: %s; "
                "it was rolled back and its episodes stay queued",
                time.monotonic() - started,
                self.worker_id,
                self.extractor.name,
                type(error).__name__,
                error,
            )
            raise
        if batch is not None:
            consolidated(batch.processed)
            logger.info(
                "consolidation batch committed: tenant=%r processed=%d added=%d reinforced=%d "
                "superseded=%d unchanged=%d in %.3f s (worker %s, extractor %s)",
                batch.user_id,
                batch.processed,
                batch.added,
                batch.reinforced,
                batch.superseded,
                batch.unchanged,
                time.monotonic() - started,
                self.worker_id,
                self.extractor.name,
            )
        return batch

    async def _batch(self, size: int, only: TenantId | None) -> BatchResult | None:
        claimed = await self.claim(size, only)
        if claimed is None:
            return None
        user, episodes = claimed
        try:
            # Validated and embedded before the write lock is taken.
            prepared = await self._prepare(user, await self._extract(episodes))
            async with self._parts.db.write() as session:
                repo = ConsolidationRepository(session=session)
                await repo.lock_tenant(user)
                # The sources may have been forgotten while extracting: write
                # only for episodes that still exist and are still leased to us.
                await guard_against_erasure(session, [user])
                ours = await repo.still_leased(user, [e.id for e in episodes], self.worker_id)
                kept = [e for e in episodes if e.id in ours]
                kept_ids = {e.id for e in kept}
                result = await self._write(
                    session, user, kept, [p for p in prepared if p.fact.sources[0] in kept_ids]
                )
                await repo.complete_leases(user, list(kept_ids), self.worker_id, self._parts.now())
        except BaseException:
            # The batch transaction rolled back; let the next run retry at once
            # instead of waiting for the lease to expire.
            async with self._parts.db.write() as session:
                await ConsolidationRepository(session=session).release_leases(
                    user, [e.id for e in episodes], self.worker_id
                )
            raise
        return result

    async def claim(
        self, size: int, only: TenantId | None
    ) -> tuple[TenantId, list[Episode]] | None:
        """Lease the next batch: (stored tenant id, up to ``size`` episodes), or None."""
        async with self._parts.db.write() as session:
            repo = ConsolidationRepository(session=session)
            now = self._parts.now()
            for user in await repo.pending_users(only):
                if not await repo.try_lock_tenant(user):
                    continue  # another worker is claiming or writing this tenant now
                if await repo.has_live_foreign_lease(user, self.worker_id, now):
                    continue
                episodes = await repo.lease_pending(
                    user, size, self.worker_id, now, now + self.lease
                )
                if episodes:
                    return user, episodes
        return None

    async def _extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        candidates = await self.extractor.extract(episodes)
        known = {e.id for e in episodes}
        for candidate in candidates:
            if not isinstance(candidate, CandidateFact) or candidate.episode_id not in known:
                raise ExtractionError(
                    f"extractor {self.extractor.name!r} returned a candidate not from this batch"
                )
        return candidates

    async def _prepare(
        self, user: TenantId, candidates: Sequence[CandidateFact]
    ) -> list[_Prepared]:
        """Validate the candidates as facts of ``user`` and embed them, in one embed batch."""
        checked = []
        for c in candidates:
            fact = Fact(
                user_id=public_user_id(user),
                subject=c.subject,
                predicate=c.predicate,
                object=c.object,
                confidence=c.confidence,
                sources=(c.episode_id,),
                valid_from=c.valid_from,
                valid_to=c.valid_to,
            )
            try:
                checked.append(valid_fact(fact, now=self._parts.now()))
            except InvalidInput as error:
                raise ExtractionError(
                    f"extractor {self.extractor.name!r} produced an invalid fact: {error}"
                ) from error
        # Consolidated facts must be found by dense recall like any other fact.
        texts = [fact_text(f) for _, f, _, _ in checked]
        vectors = await embed_checked(self._parts.embedder, texts)
        return [
            _Prepared(fact, single, valid_from, vector)
            for (_user, fact, single, valid_from), vector in zip(checked, vectors, strict=True)
        ]

    async def _write(
        self,
        session: AsyncSession,
        user: TenantId,
        episodes: Sequence[Episode],
        prepared: Sequence[_Prepared],
    ) -> BatchResult:
        """Reconcile the prepared facts with the tenant's facts through the bi-temporal rules."""
        order = {e.id: i for i, e in enumerate(episodes)}
        # Per statement in time order (supersession depends on it); statements in
        # one global order so concurrent writers take their locks in the same order.
        ordered = sorted(
            prepared,
            key=lambda p: (
                p.fact.subject,
                p.fact.predicate,
                p.valid_from,
                order[p.fact.sources[0]],
            ),
        )
        await self._parts.embedder_guard.claim(session)
        counts = dict.fromkeys(FactChange, 0)
        facts = FactWriter(session=session, embedder=self._parts.embedder)
        outcomes: list[AssertOutcome] = []
        for item in ordered:
            outcome = await facts.assert_fact(
                user,
                item.fact,
                single_valued=item.single,
                valid_from=item.valid_from,
                now=self._parts.now(),
                embedding=item.embedding,
            )
            counts[outcome.change] += 1
            outcomes.append(outcome)
            if self._after_fact is not None:
                await self._after_fact()
        await facts.record_changes(user, outcomes, self._parts.now())
        return BatchResult(
            user_id=public_user_id(user),
            processed=len(episodes),
            added=counts[FactChange.ADDED],
            reinforced=counts[FactChange.REINFORCED],
            superseded=counts[FactChange.SUPERSEDED],
            unchanged=counts[FactChange.UNCHANGED],
        )
