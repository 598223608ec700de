"""The MemoryStore facade: the public API agent code calls.

It composes the services of ``memstore.services`` (one per kind of memory,
each given the store's :class:`~memstore.db.unit.Database`), owns construction
(``__init__``, ``open``, ``bind``) and delegates every public method.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore.core.fact_input import MAX_FACT_FIELD_CHARS
from memstore.core.validation import check_limit
from memstore.db.engine import create_engine, resolve_url
from memstore.db.unit import Clock, Database
from memstore.embeddings.base import Embedder
from memstore.embeddings.hashing import HashingEmbedder
from memstore.embeddings.identity import embedder_identity
from memstore.errors import DimensionMismatch
from memstore.recall.backends import backend_for, episode_search_for
from memstore.recall.fusion import RecallTuning
from memstore.recall.hybrid import HybridRecall
from memstore.recall.search import EpisodeSearchBackend
from memstore.recall.settings import EmbedderGuard, check_embedder, recorded_settings
from memstore.schema.migrate import check_schema, needs_upgrade, upgrade
from memstore.services import (
    AgentService,
    BlockService,
    EpisodeService,
    FactService,
    TenantService,
    TransferService,
    WorkingService,
)
from memstore.services.access import AccessTracker
from memstore.services.agent.context import Context, ContextItem
from memstore.services.agent.tokens import TokenCounter
from memstore.services.consolidation.types import Extractor
from memstore.services.limits import DEFAULT_BLOCK_CHAR_LIMIT, EXPORT_FORMAT, FROM_DUMP, FromDump
from memstore.services.threads import (
    DEFAULT_MAX_SLOTS_PER_THREAD,
    DEFAULT_MAX_THREADS,
    ThreadBuffer,
)
from memstore.services.working_memory import DEFAULT_SCRATCHPAD_LIMIT, WorkingMemory
from memstore.types import (
    AccessStat,
    AssertOutcome,
    BlockVersion,
    ConsolidationResult,
    Episode,
    EpisodeMatch,
    Fact,
    FactMatch,
    GcReport,
    MemoryBlock,
    Message,
    Profile,
    utcnow,
)

__all__ = ["EXPORT_FORMAT", "FROM_DUMP", "MAX_FACT_FIELD_CHARS", "MemoryStore"]


class MemoryStore:
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
        db: Database | None = None,
        access_tracker: AccessTracker | None = None,
        episode_search: EpisodeSearchBackend | None = None,
    ) -> None:
        # ``db``, ``access_tracker`` and ``episode_search`` are given by
        # :meth:`bind`: a view joined to a caller's session that buffers
        # accesses and caches vectors in the binding store.
        self._options: dict[str, Any] = {
            "block_char_limit": block_char_limit,
            "clock": clock,
            "max_slots_per_thread": max_slots_per_thread,
            "max_threads": max_threads,
            "thread_idle_ttl_seconds": thread_idle_ttl_seconds,
            "scratchpad_limit": scratchpad_limit,
            "rls": rls,
            "recall_tuning": recall_tuning,
            "exact_scan_threshold": exact_scan_threshold,
            "allow_embedder_change": allow_embedder_change,
        }
        self.db = db if db is not None else Database(engine, clock=clock, rls=rls)
        self.engine = engine
        # The engine's connections belong to the loop the store was opened on;
        # synchronous adapters (the LangGraph store) hand their calls to it.
        self._loop = _running_loop()
        self.rls = rls
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
        self.recall_engine = HybridRecall(
            embedder=self.embedder,
            backend=self.search,
            episode_search=(
                episode_search
                if episode_search is not None
                else episode_search_for(engine, self.search)
            ),
            tuning=recall_tuning,
        )
        self.block_char_limit = block_char_limit
        # Thread context buffers (seed 000/001); limits validated there.
        self.threads = ThreadBuffer(
            self.db,
            max_slots_per_thread=max_slots_per_thread,
            max_threads=max_threads,
            idle_ttl_seconds=thread_idle_ttl_seconds,
        )
        self.scratchpad_limit = check_limit("scratchpad_limit", scratchpad_limit, maximum=1_000_000)
        self.access_tracker = (
            access_tracker if access_tracker is not None else AccessTracker(self.db)
        )
        # The services, each given its collaborators.
        db, tracker = self.db, self.access_tracker
        self._episodes = EpisodeService(
            db=db,
            embedder=self.embedder,
            embedder_guard=self.embedder_guard,
            recall=self.recall_engine,
            access_tracker=tracker,
        )
        self._facts = FactService(
            db=db,
            embedder=self.embedder,
            embedder_guard=self.embedder_guard,
            recall=self.recall_engine,
            access_tracker=tracker,
        )
        self._blocks = BlockService(db=db, block_char_limit=self.block_char_limit)
        self._working = WorkingService(
            db=db, threads=self.threads, scratchpad_limit=self.scratchpad_limit, host=self
        )
        self._tenants = TenantService(
            db=db, access_tracker=tracker, episode_search=self.recall_engine.episode_search
        )
        self._transfer = TransferService(
            db=db, embedder=self.embedder, embedder_guard=self.embedder_guard
        )
        self._agent = AgentService(db=db, access_tracker=tracker, memory=self)

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
        """
        return MemoryStore(
            **self._options,
            engine=self.engine,
            embedder=self.embedder,
            db=self.db.joined(session),
            access_tracker=self.access_tracker,
            episode_search=self.recall_engine.episode_search,
        )

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
                if postgres:
                    # The pool's connection that checked the schema predates
                    # the `vector` type the migration created, so it has no
                    # pgvector codec; later connections register it on connect.
                    await engine.dispose()
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

    # EpisodeService
    async def remember(self, episode: Episode) -> str:
        """Store one agent turn; returns its id."""
        return await self._episodes.remember(episode)

    async def remember_many(self, episodes: Sequence[Episode]) -> list[str]:
        """Store many turns in one transaction (all or nothing); returns their ids."""
        return await self._episodes.remember_many(episodes)

    async def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode:
        return await self._episodes.get_episode(episode_id, user_id=user_id)

    async def recall_scored(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        recency_weight: float = 0.0,
        min_score: float | None = None,
    ) -> list[EpisodeMatch]:
        """Episodes ranked by hybrid recall, each with its relevance and the ranking's parts.

        ``score`` is the row's relevance to the query, 0..1 (the number
        ``min_score`` is compared with; the same scale as ``recall_facts_scored``).
        Rows come in ranking order, ``parts["ranking"]``: relative to this query's
        candidates, no fixed range. Its parts: ``dense`` (cosine), ``keyword``
        (BM25), their z-scores ``dense_z``/``keyword_z`` and sum ``fused``, the
        context terms ``neighbour`` and ``session``, ``recency`` when
        ``recency_weight`` is set (added as ``recency_weight * 2^(-age / 30
        days)``); and ``relevance`` (= ``score``). docs/RECALL.md, "Scores and the
        relevance floor".
        """
        return await self._episodes.recall_scored(
            query,
            user_id=user_id,
            limit=limit,
            time_range=time_range,
            recency_weight=recency_weight,
            min_score=min_score,
        )

    async def recall(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        recency_weight: float = 0.0,
        min_score: float | None = None,
    ) -> list[Episode]:
        """The ``limit`` episodes that best match ``query`` (hybrid: vector + keyword).

        ``min_score`` (0..1, default none) drops episodes less relevant than that,
        so an unrelated query returns fewer rows or none (0.35 suits the built-in
        embedders; docs/RECALL.md, "Scores and the relevance floor").
        """
        return await self._episodes.recall(
            query,
            user_id=user_id,
            limit=limit,
            time_range=time_range,
            recency_weight=recency_weight,
            min_score=min_score,
        )

    async def session_messages(
        self, session_id: str, *, user_id: str | None = None, limit: int = 20
    ) -> list[Message]:
        """The latest turns of a session as user/assistant messages, oldest first."""
        return await self._episodes.session_messages(session_id, user_id=user_id, limit=limit)

    # FactService
    async def assert_fact(self, fact: Fact) -> AssertOutcome:
        """Like :meth:`add_fact`, but also says whether it added, reinforced or superseded."""
        return await self._facts.assert_fact(fact)

    async def add_fact(self, fact: Fact) -> str:
        """Record a fact; returns its logical id (stable across its versions)."""
        return await self._facts.add_fact(fact)

    async def retract_fact(self, fact_id: str, *, user_id: str | None = None) -> None:
        """Stop believing a fact from now on (closes transaction time; history stays)."""
        return await self._facts.retract_fact(fact_id, user_id=user_id)

    async def fact_history(
        self,
        *,
        user_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        fact_id: str | None = None,
    ) -> list[Fact]:
        """Every stored version, ordered by valid_from then recorded_at."""
        return await self._facts.fact_history(
            user_id=user_id, subject=subject, predicate=predicate, fact_id=fact_id
        )

    async def facts(
        self,
        *,
        user_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        limit: int = 100,
    ) -> list[Fact]:
        """Facts true at ``valid_at`` as believed at ``known_at`` (both default to now).

        No search: every such fact of the tenant, or of ``subject`` / ``predicate``
        when given, most recently recorded first, at most ``limit``.
        """
        return await self._facts.facts(
            user_id=user_id,
            subject=subject,
            predicate=predicate,
            valid_at=valid_at,
            known_at=known_at,
            limit=limit,
        )

    async def recall_facts(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        min_score: float | None = None,
    ) -> list[Fact]:
        """Facts true at ``valid_at`` as believed at ``known_at`` (both default to now).

        ``min_score`` (0..1, default none) drops facts less relevant than that, as in
        :meth:`recall`.
        """
        return await self._facts.recall_facts(
            query,
            user_id=user_id,
            limit=limit,
            valid_at=valid_at,
            known_at=known_at,
            min_score=min_score,
        )

    async def recall_facts_scored(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        min_score: float | None = None,
    ) -> list[FactMatch]:
        """:meth:`recall_facts` with each fact's relevance and the ranking's parts.

        ``score`` is the fact's relevance to the query, 0..1, on the same scale as
        :meth:`recall_scored`'s (so facts and episodes can be merged by it);
        ``parts["ranking"]`` is what the order follows.
        """
        return await self._facts.recall_facts_scored(
            query,
            user_id=user_id,
            limit=limit,
            valid_at=valid_at,
            known_at=known_at,
            min_score=min_score,
        )

    # BlockService
    async def update_block(
        self,
        name: str,
        content: str,
        *,
        user_id: str | None = None,
        expected_version: int | None = None,
    ) -> MemoryBlock:
        """Replace a block's content (creating it if new).

        Pass ``expected_version`` (0 for "must not exist yet") to fail with
        :class:`Conflict` instead of overwriting someone else's change.
        """
        return await self._blocks.update_block(
            name, content, user_id=user_id, expected_version=expected_version
        )

    async def append_block(
        self,
        name: str,
        content: str,
        *,
        user_id: str | None = None,
        expected_version: int | None = None,
    ) -> MemoryBlock:
        """Append to a block atomically: concurrent appends all land, in some order."""
        return await self._blocks.append_block(
            name, content, user_id=user_id, expected_version=expected_version
        )

    async def working(self, *, user_id: str | None = None) -> list[MemoryBlock]:
        """The user's pinned blocks, ordered by ``pinned_order``."""
        return await self._blocks.working(user_id=user_id)

    async def block_history(self, name: str, *, user_id: str | None = None) -> list[BlockVersion]:
        return await self._blocks.block_history(name, user_id=user_id)

    async def delete_block(self, name: str, *, user_id: str | None = None) -> None:
        return await self._blocks.delete_block(name, user_id=user_id)

    # WorkingService
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
        return self._working.working_memory(
            session_id=session_id,
            user_id=user_id,
            project_id=project_id,
            agent_id=agent_id,
            default_ttl_seconds=default_ttl_seconds,
        )

    async def gc(
        self,
        *,
        user_id: str | None = None,
        all_tenants: bool = False,
        max_threads: int | None = None,
        thread_idle_ttl_seconds: float | None = None,
    ) -> GcReport:
        """Collect idle / surplus threads and expired working-memory keys.

        One tenant (``user_id``, None = anonymous) or, with ``all_tenants=True``,
        every tenant, each in its own transaction. The limits default to the
        store's configuration. Returns what was removed.
        """
        return await self._working.gc(
            user_id=user_id,
            all_tenants=all_tenants,
            max_threads=max_threads,
            thread_idle_ttl_seconds=thread_idle_ttl_seconds,
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
        return await self._working.consolidate(
            limit, user_id, extractor, batch_size=batch_size, max_seconds=max_seconds
        )

    # TenantService
    async def profile(self, *, user_id: str | None = None) -> Profile:
        return await self._tenants.profile(user_id=user_id)

    async def list_tenants_cross_tenant(self, *, limit: int = 1000) -> list[str | None]:
        """Every tenant with stored rows (``None`` is the anonymous bucket), sorted.

        An administrative, cross-tenant read (ids only) for operator tools such
        as ``memstore inspect``; agent code never needs it.
        """
        return await self._tenants.list_tenants_cross_tenant(limit=limit)

    async def snapshot(
        self, *, user_id: str | None = None, max_rows_per_table: int = 2000
    ) -> dict[str, Any]:
        """A bounded look at one tenant, for humans (``memstore inspect``).

        Every tenant table's rows (newest first where a table has a time, at
        most ``max_rows_per_table``) without vectors or search text, and each
        table's full row count, read in one snapshot. Records no access. Use
        :meth:`export` for a complete, lossless dump.
        """
        return await self._tenants.snapshot(user_id=user_id, max_rows_per_table=max_rows_per_table)

    async def forget(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        before: datetime | None = None,
    ) -> int:
        """Erase memory; returns the number of rows deleted.

        With neither ``session_id`` nor ``before``, everything the tenant has in
        every table is erased (GDPR erasure). ``session_id`` and ``before``
        narrow it to matching episodes.
        """
        return await self._tenants.forget(user_id=user_id, session_id=session_id, before=before)

    # TransferService
    async def export_header(self, *, user_id: str | None = None) -> dict[str, Any]:
        """What describes a dump of one tenant (the first line of a JSON Lines export)."""
        return await self._transfer.export_header(user_id=user_id)

    async def export_stream(
        self, *, user_id: str | None = None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Every row of one tenant as ``(table, row)``, parents before children.

        Streamed from one consistent snapshot; rows are JSON-ready (datetimes
        as ISO 8601 with offset, bytes as base64) and omit ``user_id``.
        """
        async for item in self._transfer.export_stream(user_id=user_id):
            yield item

    async def export(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Everything stored for one tenant, table by table, JSON-serialisable."""
        return await self._transfer.export(user_id=user_id)

    async def import_(
        self, dump: Mapping[str, Any], *, user_id: str | FromDump | None = FROM_DUMP
    ) -> dict[str, int]:
        """Load a dump made by :meth:`export` into an empty tenant; returns rows per table.

        The tenant is the dump's unless ``user_id`` names another. All or
        nothing: one transaction. :class:`Conflict` if the tenant already has
        data; :class:`InvalidInput` for a malformed dump. Works across backends.
        """
        return await self._transfer.import_(dump, user_id=user_id)

    async def import_rows(
        self,
        header: Mapping[str, Any],
        rows: Iterable[tuple[str, Mapping[str, Any]]]
        | AsyncIterable[tuple[str, Mapping[str, Any]]],
        *,
        user_id: str | FromDump | None = FROM_DUMP,
    ) -> dict[str, int]:
        """Streaming form of :meth:`import_`: ``rows`` as :meth:`export_stream` yields them.

        Rows are inserted in batches inside one transaction, so memory stays
        bounded and a failure part-way leaves the tenant empty. Parent rows must
        come before their children (export order).
        """
        return await self._transfer.import_rows(header, rows, user_id=user_id)

    # AgentService
    async def context(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        query: str = "",
        max_tokens: int = 2_000,
        counter: TokenCounter | None = None,
        fact_limit: int | None = None,
        episode_limit: int | None = None,
        message_limit: int = 20,
        keep_recent: int = 4,
        min_score: float | None = None,
    ) -> Context:
        """Memory for one agent turn, packed by priority into ``max_tokens``.

        Priority: working blocks (pinned order), the newest ``keep_recent``
        messages of ``session_id``, the facts true now and the episodes of other
        sessions relevant to ``query`` (each kind in its ranking's order, the two
        merged by relevance), then older messages of this session. The budget
        decides how many facts and episodes come in: as many as fit, unless
        ``fact_limit`` / ``episode_limit`` caps their number (at most
        1,000 of each are recalled). Each fact and episode item's ``score`` is its
        relevance to ``query`` (0..1, as in :meth:`recall_scored`).
        ``min_score`` is the relevance floor of the facts and episodes recalled
        (as in :meth:`recall`); blocks and this session's messages are not recalled.
        """
        return await self._agent.context(
            user_id=user_id,
            session_id=session_id,
            query=query,
            max_tokens=max_tokens,
            counter=counter,
            fact_limit=fact_limit,
            episode_limit=episode_limit,
            message_limit=message_limit,
            keep_recent=keep_recent,
            min_score=min_score,
        )

    def tool_definitions(self, style: str = "openai") -> list[dict[str, Any]]:
        """JSON-schema definitions of the memory tools (``openai`` or ``anthropic`` style)."""
        return self._agent.tool_definitions(style)

    async def call_tool(
        self, name: str, arguments: Any, *, user_id: str | None = None
    ) -> dict[str, Any]:
        """Run a memory tool call (arguments as a dict or the model's JSON text)."""
        return await self._agent.call_tool(name, arguments, user_id=user_id)

    async def prefetch(
        self, *, user_id: str | None = None, session_id: str | None = None, limit: int = 5
    ) -> list[ContextItem]:
        """The user's hottest items: last session's ending, most-accessed facts and episodes."""
        return await self._agent.prefetch(user_id=user_id, session_id=session_id, limit=limit)

    def record_access(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> None:
        """Count one access of each item (buffered; written in batches)."""
        return self._agent.record_access(kind, item_ids, user_id=user_id)

    async def flush_access(self) -> None:
        """Write buffered access counts now (also happens on close and every few hundred)."""
        return await self._agent.flush_access()

    async def access_counts(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, int]:
        """Access counts of the given items, including not yet flushed ones."""
        return await self._agent.access_counts(kind, item_ids, user_id=user_id)

    async def access_stats(
        self, *, user_id: str | None = None, kind: str | None = None, limit: int = 20
    ) -> list[AccessStat]:
        """The most-accessed items of a user (optionally of one kind), hottest first."""
        return await self._agent.access_stats(user_id=user_id, kind=kind, limit=limit)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
