"""The MemoryStore facade: the public API agent code calls.

It owns construction (``__init__``, ``open``, ``bind``, ``tenant``) and wires the services of
``memstore.services``, each given the store's :class:`~memstore.db.unit.Database` and the other
services it works with (never the facade). Every other public method is a service's own, forwarded
with its signature and docstring (:func:`~memstore.core.forwarding.forward`), written once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore.core.fact_input import MAX_FACT_FIELD_CHARS
from memstore.core.forwarding import forward, forwards_owned, takes_options
from memstore.core.validation import check_limit
from memstore.db.engine import create_engine, resolve_url
from memstore.db.unit import Clock, Database
from memstore.embeddings.base import Embedder
from memstore.embeddings.hashing import HashingEmbedder
from memstore.embeddings.identity import embedder_identity
from memstore.embeddings.spec import ModelSpec, prepare_embedder, resolve_embedder
from memstore.errors import DimensionMismatch
from memstore.recall import RecallTuning
from memstore.recall.hybrid import HybridRecall
from memstore.rerankers.base import DEFAULT_RERANK_CANDIDATES, Reranker
from memstore.rerankers.spec import resolve_reranker, spec_candidates
from memstore.schema.migrate import check_schema, needs_upgrade, upgrade
from memstore.search.backends import backend_for, episode_search_for, fact_search_for
from memstore.search.settings import EmbedderGuard, check_embedder, recorded_settings
from memstore.search.tables import EpisodeSearchBackend
from memstore.services import (
    AgentService,
    BlockService,
    ChangeService,
    EpisodeService,
    FactService,
    TenantService,
    TransferService,
    WorkingService,
)
from memstore.services.access import AccessService, AccessTracker
from memstore.services.agent.memory import AgentMemory
from memstore.services.limits import (
    DEFAULT_BLOCK_CHAR_LIMIT,
    DEFAULT_CHANGE_RETENTION_SECONDS,
    EXPORT_FORMAT,
    FROM_DUMP,
)
from memstore.services.threads import (
    DEFAULT_MAX_SLOTS_PER_THREAD,
    DEFAULT_MAX_THREADS,
    ThreadBuffer,
)
from memstore.services.working import ConsolidationParts
from memstore.services.working_memory import DEFAULT_SCRATCHPAD_LIMIT
from memstore.tenant import TenantMemory
from memstore.types import utcnow

__all__ = [
    "EXPORT_FORMAT",
    "FROM_DUMP",
    "MAX_FACT_FIELD_CHARS",
    "MemoryStore",
    "OpenOptions",
    "StoreConfig",
]


@dataclass(frozen=True, kw_only=True)
class StoreConfig:
    """A store's options: keyword arguments of :meth:`MemoryStore.open`.

    ``rls=True`` (Postgres) sets ``memstore.user_id`` in every transaction for
    the row-level security policies of ``memstore rls enable``.
    ``allow_embedder_change=True`` opens a database whose vectors another
    embedder made (see :meth:`MemoryStore.open`). ``change_retention_seconds``:
    how long :meth:`MemoryStore.gc` keeps the change log of ``changes()``. ``reranker`` (a
    :class:`~memstore.rerankers.Reranker`, or a name as for ``embedder``:
    ``"cross-encoder"`` / ``"http"`` or a ``ModelSpec``; unset in ``open``,
    ``$MEMSTORE_RERANKER`` names it; default none) re-orders the top
    ``rerank_candidates`` rows (a ``ModelSpec``'s ``candidates`` when it names them)
    of every recall that does not say otherwise
    (``recall(..., rerank=False)``), the agent's context and tools included.
    """

    block_char_limit: int = DEFAULT_BLOCK_CHAR_LIMIT
    clock: Clock = utcnow
    max_slots_per_thread: int = DEFAULT_MAX_SLOTS_PER_THREAD
    max_threads: int = DEFAULT_MAX_THREADS
    thread_idle_ttl_seconds: float | None = None
    change_retention_seconds: float = DEFAULT_CHANGE_RETENTION_SECONDS
    scratchpad_limit: int = DEFAULT_SCRATCHPAD_LIMIT
    rls: bool = False
    recall_tuning: RecallTuning | None = None
    exact_scan_threshold: int | None = None
    allow_embedder_change: bool = False
    reranker: Reranker | ModelSpec | str | None = None
    rerank_candidates: int = DEFAULT_RERANK_CANDIDATES


@dataclass(frozen=True, kw_only=True)
class OpenOptions(StoreConfig):
    """The arguments of :meth:`MemoryStore.open`: where, with which embedder, and the options."""

    url: str | None = field(default=None, kw_only=False)
    # An object, or a name / ModelSpec built by memstore.embeddings.spec (as the CLI's
    # --embedder and $MEMSTORE_EMBEDDER are).
    embedder: Embedder | ModelSpec | str | None = None
    auto_migrate: bool | None = None
    engine_options: Mapping[str, Any] | None = None

    def config(self) -> StoreConfig:
        return StoreConfig(**{f.name: getattr(self, f.name) for f in fields(StoreConfig)})


@forwards_owned
class MemoryStore:
    """Durable agent memory over SQLite or Postgres.

    Open with :meth:`open`; every method runs in its own short transaction.
    """

    def __init__(
        self,
        *,
        engine: AsyncEngine,
        config: StoreConfig | None = None,
        embedder: Embedder | None = None,
        db: Database | None = None,
        access_tracker: AccessTracker | None = None,
        episode_search: EpisodeSearchBackend | None = None,
    ) -> None:
        # ``db``, ``access_tracker`` and ``episode_search`` are given by
        # :meth:`bind`: a view joined to a caller's session that buffers
        # accesses and caches vectors in the binding store.
        self.config = config = config if config is not None else StoreConfig()
        self.db = db if db is not None else Database(engine, clock=config.clock, rls=config.rls)
        self.engine = engine
        # The engine's connections belong to the loop the store was opened on;
        # synchronous adapters (the LangGraph store) hand their calls to it.
        self._loop = _running_loop()
        self.rls = config.rls
        self.embedder: Embedder = (
            embedder if embedder is not None else cast(Embedder, HashingEmbedder())
        )
        self.embedder_identity = embedder_identity(self.embedder)
        self.allow_embedder_change = bool(config.allow_embedder_change)
        self.embedder_guard = EmbedderGuard(
            self.embedder_identity, allow_change=self.allow_embedder_change
        )
        threshold = config.exact_scan_threshold
        self.search = backend_for(
            engine, **({} if threshold is None else {"exact_threshold": threshold})
        )
        self.recall_engine = HybridRecall(
            db=self.db,
            embedder=self.embedder,
            fact_search=fact_search_for(engine),
            episode_search=(
                episode_search
                if episode_search is not None
                else episode_search_for(engine, self.search)
            ),
            tuning=config.recall_tuning,
            reranker=resolve_reranker(config.reranker, from_env=False),
            rerank_candidates=(
                config.reranker.candidates
                if isinstance(config.reranker, ModelSpec) and config.reranker.candidates
                else config.rerank_candidates
            ),
        )
        self.block_char_limit = config.block_char_limit
        self.threads = ThreadBuffer(
            self.db,
            max_slots_per_thread=config.max_slots_per_thread,
            max_threads=config.max_threads,
            idle_ttl_seconds=config.thread_idle_ttl_seconds,
        )
        self.scratchpad_limit = check_limit(
            "scratchpad_limit", config.scratchpad_limit, maximum=1_000_000
        )
        self.access_tracker = (
            access_tracker if access_tracker is not None else AccessTracker(self.db)
        )
        # The services, each given its collaborators.
        db, tracker, recall = self.db, self.access_tracker, self.recall_engine
        embedder, guard = self.embedder, self.embedder_guard
        self._episodes = EpisodeService(
            db=db, recall=recall, access_tracker=tracker, embedder=embedder, embedder_guard=guard
        )
        self._facts = FactService(
            db=db, recall=recall, access_tracker=tracker, embedder=embedder, embedder_guard=guard
        )
        self._blocks = BlockService(db=db, block_char_limit=self.block_char_limit)
        self._working = WorkingService(
            db=db,
            threads=self.threads,
            scratchpad_limit=self.scratchpad_limit,
            consolidation=ConsolidationParts(db=db, embedder=embedder, embedder_guard=guard),
            change_retention_seconds=config.change_retention_seconds,
        )
        self._tenants = TenantService(
            db=db, access_tracker=tracker, episode_search=recall.episode_search
        )
        self._transfer = TransferService(db=db, embedder=embedder, embedder_guard=guard)
        self._access = AccessService(db=db, access_tracker=tracker)
        self._changes = ChangeService(db=db)
        # The agent layer (context, prefetch, tools) works through the services.
        services = (self._episodes, self._facts, self._blocks, self._tenants, self._access)
        self._agent = AgentService(memory=AgentMemory(db, *services))

    def now(self) -> datetime:
        """The store's clock (timezone-aware UTC)."""
        return self.db.now()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the store was created on (None if outside one); its
        connections belong to that loop, so every call must run there."""
        return self._loop

    @contextmanager
    def reads_unrecorded(self) -> Iterator[None]:
        """Reads inside this block (by this task) do not count as accesses.

        For tools that look at memory without being the agent (the inspector):
        their recalls must not raise the access prior of what they looked at.
        """
        with self.access_tracker.muted():
            yield

    def bind(self, session: AsyncSession) -> MemoryStore:
        """A view of this store whose reads and writes run in ``session``'s transaction.

        memstore begins and commits nothing through the view: the application
        commits or rolls back its own transaction, and memstore's rows with it.
        The session may come from the application's own engine on the same
        database. Accesses recorded through the view are buffered by this store.
        Calls through the view take turns on the session, however many tasks
        make them; the live feeds (``changes()``, ``threads.wait`` and
        ``threads.follow``) raise :class:`Unsupported` there (docs/bind.md).
        """
        return MemoryStore(
            engine=self.engine,
            config=self.config,
            embedder=self.embedder,
            db=self.db.joined(session),
            access_tracker=self.access_tracker,
            episode_search=self.recall_engine.episode_search,
        )

    def tenant(self, user_id: str) -> TenantMemory:
        """A handle on one tenant: every tenant-scoped method, without ``user_id``."""
        return TenantMemory(self, user_id)

    @classmethod
    @takes_options(OpenOptions)
    @asynccontextmanager
    async def open(cls, options: OpenOptions) -> AsyncIterator[MemoryStore]:
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
        ``embedder`` is an embedder object, or one named as ``--embedder`` and
        ``$MEMSTORE_EMBEDDER`` name them (``"hashing"``, ``"sentence-transformers"``,
        ``"minilm"``, ``"openai"``, or a :class:`~memstore.embeddings.spec.ModelSpec`
        with its model, base URL and width); unset, ``$MEMSTORE_EMBEDDER`` names it,
        else the deterministic :class:`HashingEmbedder` at the
        database's recorded width. An embedder of another width raises
        :class:`DimensionMismatch`. An embedder other than the one recorded as having
        made the stored vectors raises :class:`EmbedderMismatch` unless
        ``allow_embedder_change=True`` (vectors of both are then compared as if
        comparable; for tools that never embed, or right before ``reembed``).
        The other options are :class:`StoreConfig`'s.
        """
        url = options.url
        # The models are built before the engine: a bad name, a missing extra or a model
        # that is not there opens nothing (and creates no SQLite file).
        reranker = resolve_reranker(options.reranker)
        prepared = prepare_embedder(options.embedder)
        engine = create_engine(url, **dict(options.engine_options or {}))
        try:
            postgres = engine.dialect.name == "postgresql"
            # Embedded SQLite has no deploy step to run migrations from, so it
            # migrates itself; Postgres schemas change only when the operator says.
            auto = options.auto_migrate
            migrate = auto if auto is not None else not postgres
            if migrate and await needs_upgrade(engine):
                # Postgres migrations run on their own engine, without the
                # per-statement timeout (index builds may take long).
                await upgrade(resolve_url(url) if postgres else engine)
                if postgres:
                    # The pool's connection that checked the schema predates
                    # the `vector` type the migration created, so it has no
                    # pgvector codec; later connections register it on connect.
                    await engine.dispose()
            await check_schema(engine)
            dim, recorded = await recorded_settings(engine)
            embedder = None if prepared is None else resolve_embedder(prepared, recorded_dim=dim)
            if embedder is None:
                embedder = cast(Embedder, HashingEmbedder(dim))
            elif int(embedder.dim) != dim:
                raise DimensionMismatch(
                    f"the embedder produces {embedder.dim}-dimensional vectors but this "
                    f"database stores {dim}; open it with a {dim}-dimensional embedder "
                    "(the width is fixed when migrating, see docs/hybrid-recall.md)"
                )
            check_embedder(
                recorded,
                embedder_identity(embedder),
                allow_change=options.allow_embedder_change,
            )
            config = replace(options.config(), reranker=reranker)
            candidates = spec_candidates(options.reranker)
            if candidates is not None:
                config = replace(config, rerank_candidates=candidates)
            store = cls(engine=engine, config=config, embedder=embedder)
            try:
                yield store
            finally:
                try:
                    await store.access_tracker.close()
                finally:
                    # The listening connection and its waiters end with the store.
                    await store.db.signal.close()
        finally:
            await engine.dispose()

    # The public methods: the services' own, with their signatures and docstrings.
    remember = forward("_episodes", EpisodeService.remember)
    remember_many = forward("_episodes", EpisodeService.remember_many)
    get_episode = forward("_episodes", EpisodeService.get_episode)
    recall = forward("_episodes", EpisodeService.recall)
    recall_scored = forward("_episodes", EpisodeService.recall_scored)
    session_messages = forward("_episodes", EpisodeService.session_messages)

    assert_fact = forward("_facts", FactService.assert_fact)
    add_fact = forward("_facts", FactService.add_fact)
    retract_fact = forward("_facts", FactService.retract_fact)
    fact_history = forward("_facts", FactService.fact_history)
    facts = forward("_facts", FactService.facts)
    recall_facts = forward("_facts", FactService.recall_facts)
    recall_facts_scored = forward("_facts", FactService.recall_facts_scored)

    update_block = forward("_blocks", BlockService.update_block)
    append_block = forward("_blocks", BlockService.append_block)
    working = forward("_blocks", BlockService.working)
    block_history = forward("_blocks", BlockService.block_history)
    delete_block = forward("_blocks", BlockService.delete_block)

    working_memory = forward("_working", WorkingService.working_memory)
    gc = forward("_working", WorkingService.gc)
    gc_all_tenants = forward("_working", WorkingService.gc_all_tenants)
    consolidate = forward("_working", WorkingService.consolidate)
    consolidate_all_tenants = forward("_working", WorkingService.consolidate_all_tenants)

    profile = forward("_tenants", TenantService.profile)
    list_tenants_cross_tenant = forward("_tenants", TenantService.list_tenants_cross_tenant)
    snapshot = forward("_tenants", TenantService.snapshot)
    forget = forward("_tenants", TenantService.forget)

    export_header = forward("_transfer", TransferService.export_header)
    export_stream = forward("_transfer", TransferService.export_stream)
    export = forward("_transfer", TransferService.export)
    import_ = forward("_transfer", TransferService.import_)
    import_rows = forward("_transfer", TransferService.import_rows)

    context = forward("_agent", AgentService.context)
    tool_definitions = forward("_agent", AgentService.tool_definitions)
    call_tool = forward("_agent", AgentService.call_tool)
    prefetch = forward("_agent", AgentService.prefetch)

    changes = forward("_changes", ChangeService.changes)

    record_access = forward("_access", AccessService.record_access)
    flush_access = forward("_access", AccessService.flush_access)
    access_counts = forward("_access", AccessService.access_counts)
    access_stats = forward("_access", AccessService.access_stats)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
