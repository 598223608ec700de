"""The MemoryStore facade: the public API agent code calls.

It owns construction (``__init__``, ``open``, ``bind``, ``tenant``) and wires the services
of ``memstore.services``, each given its collaborators (never the facade), which stay
private. Every other public method is a service's own, forwarded with its signature and
docstring (:func:`~memstore.core.forwarding.forward`), written once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import cast

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore.core.fact_input import MAX_FACT_FIELD_CHARS
from memstore.core.forwarding import forward, forwards_owned, takes_options
from memstore.core.validation import check_limit
from memstore.db.engine import create_engine, resolve_url
from memstore.db.unit import Database
from memstore.dialects import dialect_for
from memstore.embeddings.base import Embedder
from memstore.embeddings.hashing import HashingEmbedder
from memstore.embeddings.identity import embedder_identity
from memstore.embeddings.spec import ModelSpec, prepare_embedder, resolve_embedder
from memstore.errors import DimensionMismatch
from memstore.options import OpenOptions, StoreConfig
from memstore.recall.hybrid import HybridRecall
from memstore.rerankers.spec import resolve_reranker, spec_candidates
from memstore.schema.migrate import check_schema, needs_upgrade, upgrade
from memstore.search.backends import backend_for, episode_search_for, fact_search_for
from memstore.search.settings import EmbedderGuard, check_embedder, recorded_settings
from memstore.search.tables import EpisodeSearchBackend
from memstore.search.tuning import RecallTuning
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
from memstore.services.langgraph import LangGraphItems
from memstore.services.limits import (
    EXPORT_FORMAT,
    FROM_DUMP,
)
from memstore.services.threads import (
    ThreadBuffer,
)
from memstore.telemetry import configure, traced_operations
from memstore.tenant import TenantMemory

__all__ = [
    "EXPORT_FORMAT",
    "FROM_DUMP",
    "MAX_FACT_FIELD_CHARS",
    "MemoryStore",
    "OpenOptions",
    "SharedParts",
    "StoreConfig",
]


@dataclass(frozen=True, kw_only=True)
class SharedParts:
    """What a store shares with the views :meth:`MemoryStore.bind` makes of it: the unit of
    work (a view's is joined to the caller's session), the access buffer and episode
    search's state (cached vectors and statistics; made for the store when None)."""

    db: Database
    access_tracker: AccessTracker
    episode_search: EpisodeSearchBackend | None = None


@traced_operations("memstore")
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
        shared: SharedParts | None = None,
    ) -> None:
        self.config = config = config if config is not None else StoreConfig()
        """The store's options (frozen), as :meth:`open` was given them."""
        self._engine = engine
        db = shared.db if shared else Database(engine, clock=config.clock, rls=config.rls)
        self._db = db
        # The engine's connections belong to this loop; sync adapters hand calls to it.
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        if embedder is None:
            embedder = cast(Embedder, HashingEmbedder())
        self._embedder = embedder
        guard = EmbedderGuard(
            embedder_identity(embedder), allow_change=bool(config.allow_embedder_change)
        )
        threshold = config.exact_scan_threshold
        options = {} if threshold is None else {"exact_threshold": threshold}
        search = backend_for(engine, **options)
        episode_search = shared.episode_search if shared else None
        if episode_search is None:
            episode_search = episode_search_for(engine, search)
        recall = HybridRecall(
            db=db,
            embedder=embedder,
            fact_search=fact_search_for(engine),
            episode_search=episode_search,
            tuning=config.recall_tuning or RecallTuning(),
            reranker=resolve_reranker(config.reranker, from_env=False),
            rerank_candidates=(
                config.reranker.candidates
                if isinstance(config.reranker, ModelSpec) and config.reranker.candidates
                else config.rerank_candidates
            ),
        )
        self.threads = ThreadBuffer(
            db,
            max_slots_per_thread=config.max_slots_per_thread,
            max_threads=config.max_threads,
            idle_ttl_seconds=config.thread_idle_ttl_seconds,
        )
        """Thread context buffers shared through the database (:class:`ThreadBuffer`)."""
        self._tracker = tracker = shared.access_tracker if shared else AccessTracker(db)
        self._shared = SharedParts(db=db, access_tracker=tracker, episode_search=episode_search)
        # The services, each given its collaborators.
        self._episodes = EpisodeService(
            db=db, hybrid=recall, access_tracker=tracker, embedder=embedder, embedder_guard=guard
        )
        self._facts = FactService(
            db=db, hybrid=recall, access_tracker=tracker, embedder=embedder, embedder_guard=guard
        )
        self._blocks = BlockService(db=db, block_char_limit=config.block_char_limit)
        self._working = WorkingService(
            db=db,
            embedder=embedder,
            embedder_guard=guard,
            threads=self.threads,
            scratchpad_limit=check_limit(
                "scratchpad_limit", config.scratchpad_limit, maximum=10**6
            ),
            change_retention_seconds=config.change_retention_seconds,
        )
        self._tenants = TenantService(db=db, access_tracker=tracker, episode_search=episode_search)
        self._transfer = TransferService(db=db, embedder=embedder, embedder_guard=guard)
        self._access = AccessService(db=db, access_tracker=tracker)
        self._changes = ChangeService(db=db)
        self._langgraph = LangGraphItems(db=db, embedder=embedder, embedder_guard=guard)
        # The agent layer (context, prefetch, tools) works through the services.
        services = (self._episodes, self._facts, self._blocks, self._tenants, self._access)
        self._agent = AgentService(db=db, memory=AgentMemory(db, *services))
        for traced in (self, self.threads, self._langgraph):
            configure(traced, backend=db.dialect, trace_tenant=config.trace_tenant)

    def now(self) -> datetime:
        """The store's clock (timezone-aware UTC)."""
        return self._db.now()

    @property
    def backend(self) -> str:
        """The database's kind: ``"sqlite"`` or ``"postgresql"`` (Citus included)."""
        return self._db.dialect

    @property
    def embedder(self) -> Embedder:
        """The embedder the store writes and searches with (``dim`` is the database's width)."""
        return self._embedder

    def langgraph_items(self) -> LangGraphItems:
        """The items :class:`~memstore.integrations.langgraph.MemstoreStore` stores here
        (embedded with :attr:`embedder`); use that class rather than this."""
        return self._langgraph

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
        with self._tracker.muted():
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
            engine=self._engine,
            config=self.config,
            embedder=self._embedder,
            shared=replace(self._shared, db=self._db.joined(session)),
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
            dialect = dialect_for(engine)
            # Embedded SQLite has no deploy step to run migrations from, so it
            # migrates itself; Postgres schemas change only when the operator says.
            auto = options.auto_migrate
            migrate = auto if auto is not None else dialect.embedded
            if migrate and await needs_upgrade(engine):
                # Postgres migrations run on their own engine, without the
                # per-statement timeout (index builds may take long).
                await upgrade(resolve_url(url) if dialect.migrates_on_own_engine else engine)
                if dialect.native_vectors:
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
            db = Database(engine, clock=config.clock, rls=config.rls)
            tracker = AccessTracker(db)
            try:
                shared = SharedParts(db=db, access_tracker=tracker)
                yield cls(engine=engine, config=config, embedder=embedder, shared=shared)
            finally:
                try:
                    await tracker.close()
                finally:
                    # The listening connection and its waiters end with the store.
                    await db.signal.close()
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
    consolidator = forward("_working", WorkingService.consolidator)

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
    change_position = forward("_changes", ChangeService.change_position)

    record_access = forward("_access", AccessService.record_access)
    flush_access = forward("_access", AccessService.flush_access)
    access_counts = forward("_access", AccessService.access_counts)
    access_stats = forward("_access", AccessService.access_stats)
