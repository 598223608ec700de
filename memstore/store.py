"""The MemoryStore facade: the public API agent code calls.

Its methods live in ``memstore.api``, one mixin per kind of memory; this module
wires them together and owns construction (``__init__``) and ``open``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.agent.access import AccessTracker
from memstore.api import AgentAPI, BlockAPI, EpisodeAPI, FactAPI, TenantAPI, TransferAPI, WorkingAPI
from memstore.api.base import (
    DEFAULT_BLOCK_CHAR_LIMIT,
    EXPORT_FORMAT,
    FROM_DUMP,
    MAX_FACT_FIELD_CHARS,
    Clock,
)
from memstore.db.engine import create_engine, resolve_url
from memstore.db.unit import Database
from memstore.embeddings.base import Embedder
from memstore.embeddings.hashing import HashingEmbedder
from memstore.embeddings.identity import embedder_identity
from memstore.errors import DimensionMismatch
from memstore.migrate import check_schema, needs_upgrade, upgrade
from memstore.recall.backends import backend_for
from memstore.recall.fusion import RecallTuning
from memstore.recall.hybrid import HybridRecall
from memstore.recall.settings import EmbedderGuard, check_embedder, recorded_settings
from memstore.threads import DEFAULT_MAX_SLOTS_PER_THREAD, DEFAULT_MAX_THREADS, ThreadBuffer
from memstore.types import utcnow
from memstore.validation import check_limit
from memstore.working_memory import DEFAULT_SCRATCHPAD_LIMIT

__all__ = ["EXPORT_FORMAT", "FROM_DUMP", "MAX_FACT_FIELD_CHARS", "MemoryStore"]


class MemoryStore(EpisodeAPI, FactAPI, BlockAPI, WorkingAPI, TenantAPI, TransferAPI, AgentAPI):
    """Durable agent memory over SQLite or Postgres.

    Open with :meth:`open`; every method runs in its own short transaction.
    """

    def __init__(
        self,
        *,
        engine: AsyncEngine,
        block_char_limit: int = DEFAULT_BLOCK_CHAR_LIMIT,
        clock: Clock = utcnow,
        max_slots_per_thread: int = DEFAULT_MAX_SLOTS_PER_THREAD,
        max_threads: int = DEFAULT_MAX_THREADS,
        thread_idle_ttl_seconds: float | None = None,
        scratchpad_limit: int = DEFAULT_SCRATCHPAD_LIMIT,
        rls: bool = False,
        embedder: Embedder | None = None,
        recall_tuning: RecallTuning | None = None,
        exact_scan_threshold: int | None = None,
        allow_embedder_change: bool = False,
    ) -> None:
        self.db = Database(engine, clock=clock, rls=rls)
        self.engine = engine
        self.embedder: Embedder = (
            embedder if embedder is not None else cast(Embedder, HashingEmbedder())
        )
        self.embedder_identity = embedder_identity(self.embedder)
        self.allow_embedder_change = bool(allow_embedder_change)
        self.embedder_guard = EmbedderGuard(
            self.embedder_identity, allow_change=self.allow_embedder_change
        )
        options = {} if exact_scan_threshold is None else {"exact_threshold": exact_scan_threshold}
        self.search = backend_for(engine, **options)
        self._recall = HybridRecall(
            embedder=self.embedder, backend=self.search, tuning=recall_tuning
        )
        self.block_char_limit = block_char_limit
        # With row-level security every transaction names its tenant (see _as_tenant).
        self.rls = rls
        # Thread context buffers (seed 000/001); limits validated there.
        self.threads = ThreadBuffer(
            self.db,
            max_slots_per_thread=max_slots_per_thread,
            max_threads=max_threads,
            idle_ttl_seconds=thread_idle_ttl_seconds,
        )
        self.scratchpad_limit = check_limit("scratchpad_limit", scratchpad_limit, maximum=1_000_000)
        self.access_tracker = AccessTracker(self.db)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        url: str | None = None,
        *,
        embedder: Embedder | None = None,
        auto_migrate: bool | None = None,
        allow_embedder_change: bool = False,
        block_char_limit: int = DEFAULT_BLOCK_CHAR_LIMIT,
        clock: Clock = utcnow,
        max_slots_per_thread: int = DEFAULT_MAX_SLOTS_PER_THREAD,
        max_threads: int = DEFAULT_MAX_THREADS,
        thread_idle_ttl_seconds: float | None = None,
        scratchpad_limit: int = DEFAULT_SCRATCHPAD_LIMIT,
        rls: bool = False,
        engine_options: Mapping[str, Any] | None = None,
        recall_tuning: RecallTuning | None = None,
        exact_scan_threshold: int | None = None,
    ) -> AsyncIterator[MemoryStore]:
        """Open a store on ``url`` (else ``$MEMSTORE_URL``, else ``./memstore.db``).

        A SQLite database (the embedded default ``./memstore.db`` or any
        ``sqlite`` URL) is created or upgraded to the current schema here; a
        Postgres one must be migrated by the operator (``memstore migrate``) and
        raises :class:`SchemaOutOfDate` unless it is current. ``auto_migrate``
        overrides that per call (``False`` makes SQLite refuse too; ``True``
        upgrades Postgres). A schema newer than the code is always refused.
        ``rls=True`` (Postgres) sets ``memstore.user_id`` in every transaction for
        the row-level security policies of ``memstore rls enable``.
        ``engine_options`` go to :func:`memstore.db.engine.create_engine`
        (e.g. ``connect_timeout``, ``command_timeout``, ``sqlite_busy_timeout_ms``).
        ``embedder`` defaults to the deterministic :class:`HashingEmbedder` at the
        database's recorded width; an embedder of another width raises
        :class:`DimensionMismatch`. An embedder other than the one recorded as having
        made the stored vectors raises :class:`EmbedderMismatch` unless
        ``allow_embedder_change=True`` (vectors of both are then compared as if
        comparable; for tools that never embed, or right before ``reembed``).
        """
        engine = create_engine(url, **dict(engine_options or {}))
        try:
            postgres = engine.dialect.name == "postgresql"
            # Embedded SQLite has no deploy step to run migrations from, so it
            # migrates itself; Postgres schemas change only when the operator says.
            migrate = auto_migrate if auto_migrate is not None else not postgres
            if migrate and await needs_upgrade(engine):
                # Postgres migrations run on their own engine, without the
                # per-statement timeout (index builds may take long).
                await upgrade(resolve_url(url) if postgres else engine)
            await check_schema(engine)
            dim, recorded = await recorded_settings(engine)
            if embedder is None:
                embedder = cast(Embedder, HashingEmbedder(dim))
            elif int(embedder.dim) != dim:
                raise DimensionMismatch(
                    f"the embedder produces {embedder.dim}-dimensional vectors but this "
                    f"database stores {dim}; open it with a {dim}-dimensional embedder "
                    "(the width is fixed when migrating, see README 'Recall')"
                )
            check_embedder(
                recorded, embedder_identity(embedder), allow_change=allow_embedder_change
            )
            store = cls(
                engine=engine,
                block_char_limit=block_char_limit,
                clock=clock,
                max_slots_per_thread=max_slots_per_thread,
                max_threads=max_threads,
                thread_idle_ttl_seconds=thread_idle_ttl_seconds,
                scratchpad_limit=scratchpad_limit,
                rls=rls,
                embedder=embedder,
                recall_tuning=recall_tuning,
                exact_scan_threshold=exact_scan_threshold,
                allow_embedder_change=allow_embedder_change,
            )
            try:
                yield store
            finally:
                await store.access_tracker.close()
        finally:
            await engine.dispose()
