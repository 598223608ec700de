"""The MemoryStore facade: the public API agent code calls."""

from __future__ import annotations

import enum
import math
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from memstore.agent.access import AccessTracker
from memstore.agent.context import Context, ContextItem
from memstore.agent.tokens import TokenCounter
from memstore.db.engine import READ_ONLY, create_engine, resolve_url
from memstore.db.errors import translated
from memstore.embeddings.base import Embedder, embed_checked
from memstore.embeddings.hashing import HashingEmbedder
from memstore.errors import Conflict, DimensionMismatch, InvalidInput, NotFound
from memstore.gc import GcReport, collect
from memstore.migrate import check_schema, current_revision, upgrade
from memstore.models import EpisodeRow
from memstore.predicates import is_single_valued, normalize_predicate
from memstore.recall.backends import backend_for
from memstore.recall.documents import episode_search_text, episode_text, fact_text
from memstore.recall.fusion import RecallTuning
from memstore.recall.hybrid import HybridRecall
from memstore.recall.settings import recorded_embedding_dim
from memstore.repositories.access import AccessRepository, AccessStat
from memstore.repositories.blocks import BlockRepository
from memstore.repositories.episodes import EpisodeRepository, episode_from_row
from memstore.repositories.facts import AssertOutcome, FactRepository, fact_from_row
from memstore.repositories.tenants import TenantRepository, tenant_table, tenant_tables
from memstore.scopes import ScopeContext
from memstore.security.rls import RLS_SETTING
from memstore.tenancy import public_user_id, storage_user_id
from memstore.threads import (
    DEFAULT_MAX_SLOTS_PER_THREAD,
    DEFAULT_MAX_THREADS,
    ThreadBuffer,
)
from memstore.types import (
    BlockVersion,
    Episode,
    EpisodeMatch,
    Fact,
    MemoryBlock,
    Message,
    Profile,
    Role,
    utcnow,
)
from memstore.validation import (
    MAX_IDENTIFIER_CHARS,
    MAX_TEXT_CHARS,
    check_aware,
    check_identifier,
    check_json,
    check_limit,
    check_text,
)
from memstore.working_memory import DEFAULT_SCRATCHPAD_LIMIT, WorkingMemory

if TYPE_CHECKING:
    from memstore.consolidation.types import ConsolidationResult, Extractor

__all__ = ["EXPORT_FORMAT", "FROM_DUMP", "MemoryStore"]

EXPORT_FORMAT = "memstore-export/1"
DEFAULT_BLOCK_CHAR_LIMIT = 5_000
MAX_FACT_FIELD_CHARS = 2_000
MAX_BATCH = 10_000
MAX_EPISODE_ID_CHARS = 36

Clock = Callable[[], datetime]
_ACCESS_KINDS = frozenset({"episode", "fact", "block"})


class _FromDump(enum.Enum):
    FROM_DUMP = "from-dump"


# Default of import_(user_id=...): the tenant recorded in the dump (None is anonymous).
FROM_DUMP = _FromDump.FROM_DUMP
_IMPORT_BATCH = 500


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
    ) -> None:
        if rls and engine.dialect.name != "postgresql":
            raise InvalidInput("row-level security (rls=True) needs PostgreSQL")
        self.engine = engine
        self.embedder: Embedder = embedder if embedder is not None else cast(
            Embedder, HashingEmbedder()
        )
        options = {} if exact_scan_threshold is None else {"exact_threshold": exact_scan_threshold}
        self.search = backend_for(engine, **options)
        self._recall = HybridRecall(
            embedder=self.embedder, backend=self.search, tuning=recall_tuning
        )
        self.block_char_limit = block_char_limit
        # With row-level security every transaction names its tenant (see _as_tenant).
        self.rls = rls
        self._clock = clock
        # Thread context buffers (seed 000/001); limits validated there.
        self.threads = ThreadBuffer(
            self, max_slots_per_thread=max_slots_per_thread, max_threads=max_threads,
            idle_ttl_seconds=thread_idle_ttl_seconds,
        )
        self.scratchpad_limit = check_limit(
            "scratchpad_limit", scratchpad_limit, maximum=1_000_000
        )
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._read_sessions = async_sessionmaker(
            engine.execution_options(**{READ_ONLY: True}), expire_on_commit=False
        )
        self.access_tracker = AccessTracker(self._sessions, as_tenant=self._as_tenant)

    # ---- lifecycle --------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        url: str | None = None,
        *,
        embedder: Embedder | None = None,
        auto_migrate: bool = False,
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

        Raises :class:`SchemaOutOfDate` unless the schema is current;
        ``auto_migrate=True`` upgrades it first (handy for the embedded default).
        ``rls=True`` (Postgres) sets ``memstore.user_id`` in every transaction for
        the row-level security policies of ``memstore rls enable``.
        ``engine_options`` go to :func:`memstore.db.engine.create_engine`
        (e.g. ``connect_timeout``, ``command_timeout``, ``sqlite_busy_timeout_ms``).
        ``embedder`` defaults to the deterministic :class:`HashingEmbedder` at the
        database's recorded width; an embedder of another width raises
        :class:`DimensionMismatch`.
        """
        engine = create_engine(url, **dict(engine_options or {}))
        try:
            if auto_migrate:
                # Postgres migrations run on their own engine, without the
                # per-statement timeout (index builds may take long).
                postgres = engine.dialect.name == "postgresql"
                await upgrade(resolve_url(url) if postgres else engine)
            await check_schema(engine)
            dim = await recorded_embedding_dim(engine)
            if embedder is None:
                embedder = cast(Embedder, HashingEmbedder(dim))
            elif int(embedder.dim) != dim:
                raise DimensionMismatch(
                    f"the embedder produces {embedder.dim}-dimensional vectors but this "
                    f"database stores {dim}; open it with a {dim}-dimensional embedder "
                    "(the width is fixed when migrating, see README 'Recall')"
                )
            store = cls(
                engine=engine, block_char_limit=block_char_limit, clock=clock,
                max_slots_per_thread=max_slots_per_thread, max_threads=max_threads,
                thread_idle_ttl_seconds=thread_idle_ttl_seconds,
                scratchpad_limit=scratchpad_limit, rls=rls,
                embedder=embedder, recall_tuning=recall_tuning,
                exact_scan_threshold=exact_scan_threshold,
            )
            try:
                yield store
            finally:
                await store.access_tracker.close()
        finally:
            await engine.dispose()

    def now(self) -> datetime:
        return check_aware("clock()", self._clock())

    # Every facade call is one transaction. Driver errors raised anywhere in it,
    # including at BEGIN (connect) and COMMIT, surface as MemstoreError
    # (Unavailable when the database cannot be reached). ``tenant`` is the
    # stored user id the transaction works for (needed for row-level security).

    @asynccontextmanager
    async def _write(self, tenant: str | None = None) -> AsyncIterator[AsyncSession]:
        with translated("write"):
            async with self._sessions.begin() as session:
                if tenant is not None:
                    await self._as_tenant(session, tenant)
                yield session

    @asynccontextmanager
    async def _read(
        self, tenant: str | None = None, *, snapshot: bool = False
    ) -> AsyncIterator[AsyncSession]:
        """A read transaction; ``snapshot`` makes every statement see the same data."""
        with translated("read"):
            async with self._read_sessions.begin() as session:
                if snapshot and self.engine.dialect.name == "postgresql":
                    # SQLite read transactions are snapshots already (WAL).
                    await session.connection(
                        execution_options={"isolation_level": "REPEATABLE READ"}
                    )
                if tenant is not None:
                    await self._as_tenant(session, tenant)
                yield session

    async def _as_tenant(self, session: AsyncSession, tenant: str) -> None:
        """Name the transaction's tenant for the row-level security policies.

        Transaction-local (``is_local``), so a pooled connection never carries it
        into the next transaction; may be called again to switch tenant.
        """
        if self.rls:
            await session.execute(select(func.set_config(RLS_SETTING, tenant, True)))

    # ---- episodes -----------------------------------------------------------

    def _valid_episode(self, episode: Episode) -> tuple[str, Episode]:
        if not isinstance(episode, Episode):
            raise InvalidInput(f"expected an Episode, got {type(episode).__name__}")
        user = storage_user_id(episode.user_id)
        # The id column is String(36) (a UUID): longer ids would fit SQLite only.
        check_identifier("episode.id", episode.id, max_chars=MAX_EPISODE_ID_CHARS)
        check_identifier("session_id", episode.session_id)
        check_text("episode.input", episode.input, allow_empty=True)
        check_text("episode.output", episode.output, allow_empty=True)
        if not (episode.input.strip() or episode.output.strip()):
            raise InvalidInput("an episode needs a non-empty input or output")
        if not isinstance(episode.tool_calls, list):
            raise InvalidInput("episode.tool_calls must be a list")
        check_json("episode.tool_calls", episode.tool_calls)
        if not isinstance(episode.metadata, dict):
            raise InvalidInput("episode.metadata must be a dict")
        check_json("episode.metadata", episode.metadata)
        check_aware("episode.occurred_at", episode.occurred_at)
        return user, episode

    async def remember(self, episode: Episode) -> str:
        """Store one agent turn; returns its id."""
        (episode_id,) = await self.remember_many([episode])
        return episode_id

    async def remember_many(self, episodes: Sequence[Episode]) -> list[str]:
        """Store many turns in one transaction (all or nothing); returns their ids."""
        episodes = list(episodes)
        if not episodes:
            return []
        if len(episodes) > MAX_BATCH:
            raise InvalidInput(f"at most {MAX_BATCH} episodes per call")
        checked = [self._valid_episode(e) for e in episodes]
        if len({(u, e.id) for u, e in checked}) != len(checked):
            raise InvalidInput("duplicate episode ids in one batch")
        # Embed before taking the write lock: inference can be slow.
        vectors = await embed_checked(self.embedder, [episode_text(e) for _, e in checked])
        now = self.now()
        by_user: dict[str, list[tuple[Episode, np.ndarray]]] = {}
        for (user, episode), vector in zip(checked, vectors, strict=True):
            by_user.setdefault(user, []).append((episode, vector))
        async with self._write() as session:
            repo = EpisodeRepository(session=session)
            for user, group in by_user.items():
                await self._as_tenant(session, user)
                turns = await repo.turn_counter(user, [e.session_id for e, _ in group])
                extras = [
                    {"embedding": vector, "search_text": episode_search_text(e),
                     "turn": turns(e.session_id)}
                    for e, vector in group
                ]
                await repo.add_many(user, [e for e, _ in group], now, extras=extras)
        return [e.id for _, e in checked]

    async def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode:
        user = storage_user_id(user_id)
        check_identifier("episode_id", episode_id)
        async with self._read(user) as session:
            found = await EpisodeRepository(session=session).get(user, episode_id)
        if found is None:
            raise NotFound(f"no episode {episode_id!r} for this user")
        self.access_tracker.record(user, "episode", [found.id], self.now())
        return found

    async def recall_scored(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        recency_weight: float = 0.0,
    ) -> list[EpisodeMatch]:
        """Episodes ranked by hybrid recall, with the score's parts.

        Parts: ``dense`` (cosine), ``keyword`` (BM25), their z-scores
        ``dense_z``/``keyword_z`` and sum ``fused``, the context terms ``neighbour``
        and ``session``, and ``recency`` when ``recency_weight`` is set (added as
        ``recency_weight * 2^(-age / 30 days)``).
        """
        user = storage_user_id(user_id)
        check_text("query", query, allow_empty=True, max_chars=10_000)
        check_limit("limit", limit)
        if time_range is not None:
            start, end = time_range
            check_aware("time_range[0]", start)
            check_aware("time_range[1]", end)
        if isinstance(recency_weight, bool) or not isinstance(recency_weight, int | float) or (
            not math.isfinite(recency_weight) or recency_weight < 0
        ):
            raise InvalidInput("recency_weight must be a non-negative number")
        now = self.now()
        if not query.strip():
            # Nothing to rank by: the newest episodes, as an agent resuming expects.
            async with self._read(user) as session:
                newest = await EpisodeRepository(session=session).keyword_candidates(
                    user, [], time_range=time_range, limit=limit
                )
            self.access_tracker.record(user, "episode", [e.id for e in newest], now)
            return [EpisodeMatch(episode=e, score=0.0, parts={}) for e in newest]
        qvec = await self._recall.embed_query(query)
        async with self._read(user) as session:
            ranked = await self._recall.episodes(
                session, user, query, time_range=time_range, now=now,
                recency_weight=float(recency_weight), qvec=qvec, limit=limit,
            )
            # Load a few more than needed so ties can be broken newest-first.
            wanted = [s.id for s in ranked[: limit * 2 + 10]]
            rows = (await session.scalars(select(EpisodeRow).where(
                EpisodeRow.user_id == user, EpisodeRow.id.in_(wanted)
            ))).all() if wanted else []
        episodes = {r.id: episode_from_row(r) for r in rows}
        matches = [
            EpisodeMatch(episode=episodes[s.id], score=s.score, parts=s.parts)
            for s in ranked[: len(wanted)] if s.id in episodes
        ]
        matches.sort(key=lambda m: (-m.score, -m.episode.occurred_at.timestamp(), m.episode.id))
        self.access_tracker.record(user, "episode", [m.episode.id for m in matches[:limit]], now)
        return matches[:limit]

    async def recall(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        recency_weight: float = 0.0,
    ) -> list[Episode]:
        """The ``limit`` episodes that best match ``query`` (hybrid: vector + keyword)."""
        matches = await self.recall_scored(
            query, user_id=user_id, limit=limit, time_range=time_range,
            recency_weight=recency_weight,
        )
        return [m.episode for m in matches]

    async def session_messages(
        self, session_id: str, *, user_id: str | None = None, limit: int = 20
    ) -> list[Message]:
        """The latest turns of a session as user/assistant messages, oldest first."""
        user = storage_user_id(user_id)
        check_identifier("session_id", session_id)
        check_limit("limit", limit)
        async with self._read(user) as session:
            episodes = await EpisodeRepository(session=session).latest_in_session(
                user, session_id, max(1, limit // 2)
            )
        messages: list[Message] = []
        for ep in episodes:
            if ep.input:
                messages.append(Message(role=Role.USER, content=ep.input, episode_id=ep.id))
            if ep.output:
                messages.append(Message(role=Role.ASSISTANT, content=ep.output, episode_id=ep.id))
        return messages[-limit:]

    # ---- facts ------------------------------------------------------------------

    def _valid_fact(self, fact: Fact) -> tuple[str, Fact, bool, datetime]:
        if not isinstance(fact, Fact):
            raise InvalidInput(f"expected a Fact, got {type(fact).__name__}")
        user = storage_user_id(fact.user_id)
        subject = check_text("fact.subject", fact.subject, max_chars=MAX_FACT_FIELD_CHARS).strip()
        obj = check_text("fact.object", fact.object, max_chars=MAX_FACT_FIELD_CHARS).strip()
        check_text("fact.predicate", fact.predicate, max_chars=MAX_IDENTIFIER_CHARS)
        predicate = normalize_predicate(fact.predicate)
        confidence = fact.confidence
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not (
            0.0 <= confidence <= 1.0
        ):
            raise InvalidInput("fact.confidence must be a number between 0 and 1")
        sources = tuple(fact.sources)
        for source in sources:
            check_identifier("fact.sources[]", source)
        valid_from = check_aware("fact.valid_from", fact.valid_from) if (
            fact.valid_from is not None) else self.now()
        if fact.valid_to is not None:
            check_aware("fact.valid_to", fact.valid_to)
            if fact.valid_to <= valid_from:
                raise InvalidInput("fact.valid_to must be later than fact.valid_from")
        single = fact.single_valued if fact.single_valued is not None else (
            is_single_valued(predicate))
        cleaned = replace(fact, subject=subject, object=obj, predicate=predicate,
                          confidence=float(confidence), sources=sources)
        return user, cleaned, bool(single), valid_from

    async def assert_fact(self, fact: Fact) -> AssertOutcome:
        """Like :meth:`add_fact`, but also says whether it added, reinforced or superseded."""
        user, cleaned, single, valid_from = self._valid_fact(fact)
        (vector,) = await embed_checked(self.embedder, [fact_text(cleaned)])
        async with self._write(user) as session:
            return await FactRepository(session=session).assert_fact(
                user, cleaned, single_valued=single, valid_from=valid_from, now=self.now(),
                embedding=vector,
            )

    async def add_fact(self, fact: Fact) -> str:
        """Record a fact; returns its logical id (stable across its versions)."""
        return (await self.assert_fact(fact)).fact_id

    async def retract_fact(self, fact_id: str, *, user_id: str | None = None) -> None:
        """Stop believing a fact from now on (closes transaction time; history stays)."""
        user = storage_user_id(user_id)
        check_identifier("fact_id", fact_id)
        async with self._write(user) as session:
            closed = await FactRepository(session=session).retract(user, fact_id, self.now())
        if not closed:
            raise NotFound(f"no current fact {fact_id!r} for this user")

    async def fact_history(
        self,
        *,
        user_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        fact_id: str | None = None,
    ) -> list[Fact]:
        """Every stored version, ordered by valid_from then recorded_at."""
        user = storage_user_id(user_id)
        if subject is not None:
            subject = check_text("subject", subject, max_chars=MAX_FACT_FIELD_CHARS).strip()
        if predicate is not None:
            predicate = normalize_predicate(check_text("predicate", predicate))
        if fact_id is not None:
            check_identifier("fact_id", fact_id)
        async with self._read(user) as session:
            return await FactRepository(session=session).history(
                user, subject=subject, predicate=predicate, fact_id=fact_id
            )

    async def recall_facts(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
    ) -> list[Fact]:
        """Facts true at ``valid_at`` as believed at ``known_at`` (both default to now)."""
        user = storage_user_id(user_id)
        check_text("query", query, allow_empty=True, max_chars=10_000)
        check_limit("limit", limit)
        now = self.now()
        valid_at = check_aware("valid_at", valid_at) if valid_at is not None else now
        known_at = check_aware("known_at", known_at) if known_at is not None else now
        if not query.strip():
            # Nothing to rank by: the most recently recorded facts.
            async with self._read(user) as session:
                newest = await FactRepository(session=session).text_candidates(
                    user, [], valid_at=valid_at, known_at=known_at, limit=limit
                )
            self.access_tracker.record(user, "fact", [f.fact_id or "" for f in newest], now)
            return newest
        qvec = await self._recall.embed_query(query)
        async with self._read(user) as session:
            facts = FactRepository(session=session)
            ranked = await self._recall.facts(
                session, user, query, where=facts.as_of(valid_at, known_at), qvec=qvec,
                limit=limit,
            )
            wanted = [s.id for s in ranked[: limit * 2 + 10]]
            rows = await facts.rows_by_id(user, wanted)
        score = {s.id: s.score for s in ranked}
        found = [fact_from_row(r) for r in rows]
        # Ties (e.g. an empty query) go to the most recently recorded.
        found.sort(key=lambda f: (-score[f.id or ""], -(f.recorded_at or now).timestamp(),
                                  f.id or ""))
        self.access_tracker.record(user, "fact", [f.fact_id or "" for f in found[:limit]], now)
        return found[:limit]

    # ---- working blocks -------------------------------------------------------------

    @property
    def _content_cap(self) -> int:
        # The block limit itself is enforced on the edited content by the repository.
        return max(self.block_char_limit, MAX_TEXT_CHARS)

    async def _write_block(
        self, name: str, edit: Callable[[str], str], user_id: str | None,
        expected_version: int | None,
    ) -> MemoryBlock:
        user = storage_user_id(user_id)
        check_identifier("block name", name)
        if expected_version is not None and (
            isinstance(expected_version, bool) or not isinstance(expected_version, int)
            or expected_version < 0
        ):
            raise InvalidInput("expected_version must be a non-negative integer")
        async with self._write(user) as session:
            return await BlockRepository(session=session).write(
                user, name, edit, char_limit=self.block_char_limit,
                expected_version=expected_version, now=self.now(),
            )

    async def update_block(
        self, name: str, content: str, *, user_id: str | None = None,
        expected_version: int | None = None,
    ) -> MemoryBlock:
        """Replace a block's content (creating it if new).

        Pass ``expected_version`` (0 for "must not exist yet") to fail with
        :class:`Conflict` instead of overwriting someone else's change.
        """
        check_text("content", content, allow_empty=True, max_chars=self._content_cap)
        return await self._write_block(name, lambda _old: content, user_id, expected_version)

    async def append_block(
        self, name: str, content: str, *, user_id: str | None = None,
        expected_version: int | None = None,
    ) -> MemoryBlock:
        """Append to a block atomically: concurrent appends all land, in some order."""
        check_text("content", content, max_chars=self._content_cap)
        return await self._write_block(name, lambda old: old + content, user_id, expected_version)

    async def working(self, *, user_id: str | None = None) -> list[MemoryBlock]:
        """The user's pinned blocks, ordered by ``pinned_order``."""
        user = storage_user_id(user_id)
        async with self._read(user) as session:
            return await BlockRepository(session=session).in_order(user)

    async def block_history(self, name: str, *, user_id: str | None = None) -> list[BlockVersion]:
        user = storage_user_id(user_id)
        check_identifier("block name", name)
        async with self._read(user) as session:
            return await BlockRepository(session=session).history(user, name)

    async def delete_block(self, name: str, *, user_id: str | None = None) -> None:
        user = storage_user_id(user_id)
        check_identifier("block name", name)
        async with self._write(user) as session:
            if not await BlockRepository(session=session).delete(user, name):
                raise NotFound(f"no block {name!r} for this user")

    # ---- working memory and garbage collection ---------------------------------------

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
        for name, value in (("project_id", project_id), ("agent_id", agent_id),
                            ("session_id", session_id)):
            if value is not None:
                check_identifier(name, value)
        scope = ScopeContext.build(
            project_id=project_id, agent_id=agent_id, session_id=session_id
        )
        if scope is None:
            raise InvalidInput("working memory needs a project_id, agent_id or session_id")
        return WorkingMemory(
            self, scope, user_id=user_id, default_ttl_seconds=default_ttl_seconds,
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
        """Collect idle / surplus threads and expired working-memory keys.

        One tenant (``user_id``, None = anonymous) or, with ``all_tenants=True``,
        every tenant, each in its own transaction. The limits default to the
        store's configuration. Returns what was removed.
        """
        if all_tenants and user_id is not None:
            raise InvalidInput("pass either user_id or all_tenants=True, not both")
        user = None if all_tenants else storage_user_id(user_id)
        return await collect(
            self, user=user, max_threads=max_threads, idle_ttl_seconds=thread_idle_ttl_seconds
        )

    # ---- tenant-wide ------------------------------------------------------------------

    # ---- consolidation ------------------------------------------------------------

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
        exactly once (see :mod:`memstore.consolidation.consolidator`).
        """
        from memstore.consolidation.consolidator import DEFAULT_BATCH_SIZE, Consolidator

        consolidator = Consolidator(self, extractor=extractor,
                                    batch_size=batch_size or DEFAULT_BATCH_SIZE)
        return await consolidator.run(limit=limit, user_id=user_id, max_seconds=max_seconds)

    async def profile(self, *, user_id: str | None = None) -> Profile:
        user = storage_user_id(user_id)
        async with self._read(user) as session:
            episodes = EpisodeRepository(session=session)
            facts = FactRepository(session=session)
            return Profile(
                user_id=public_user_id(user),
                episode_count=await episodes.count(user),
                fact_count=await facts.count_current(user),
                block_count=await BlockRepository(session=session).count(user),
                last_seen=await episodes.last_seen(user),
                recent_sessions=await episodes.recent_sessions(user, 10),
                sample_facts=await facts.latest_current(user, 10),
            )

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
        user = storage_user_id(user_id)
        if session_id is not None:
            check_identifier("session_id", session_id)
        if before is not None:
            check_aware("before", before)
        if session_id is None and before is None:
            await self.access_tracker.discard(user)
        async with self._write(user) as session:
            if session_id is None and before is None:
                removed = await TenantRepository(session=session).erase(user)
                return sum(removed.values())
            deleted = await EpisodeRepository(session=session).delete(
                user, session_id=session_id, before=before
            )
            await AccessRepository(session=session).prune_episodes(user)
            return deleted

    # ---- export / import ------------------------------------------------------------

    async def export_header(self, *, user_id: str | None = None) -> dict[str, Any]:
        """What describes a dump of one tenant (the first line of a JSON Lines export)."""
        user = storage_user_id(user_id)
        return {
            "format": EXPORT_FORMAT,
            "user_id": public_user_id(user),
            "exported_at": self.now().isoformat(),
            "backend": self.engine.dialect.name,
            "schema_revision": await current_revision(self.engine),
            "tables": [t.name for t in reversed(tenant_tables())],
        }

    # ---- agent-facing layer (memstore.agent) ------------------------------------------

    async def context(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        query: str = "",
        max_tokens: int = 2_000,
        counter: TokenCounter | None = None,
        fact_limit: int = 10,
        episode_limit: int = 5,
        message_limit: int = 20,
        keep_recent: int = 4,
    ) -> Context:
        """Memory for one agent turn, packed by priority into ``max_tokens``.

        Priority: working blocks (pinned order), the newest ``keep_recent``
        messages of ``session_id``, facts true now relevant to ``query``, relevant
        episodes of other sessions, then older messages of this session.
        """
        from memstore.agent.builder import build_context

        return await build_context(
            self, user_id=user_id, session_id=session_id, query=query, max_tokens=max_tokens,
            counter=counter, fact_limit=fact_limit, episode_limit=episode_limit,
            message_limit=message_limit, keep_recent=keep_recent,
        )

    def tool_definitions(self, style: str = "openai") -> list[dict[str, Any]]:
        """JSON-schema definitions of the memory tools (``openai`` or ``anthropic`` style)."""
        from memstore.agent.tools import tool_definitions

        return tool_definitions(style)  # type: ignore[arg-type]

    async def call_tool(
        self, name: str, arguments: Any, *, user_id: str | None = None
    ) -> dict[str, Any]:
        """Run a memory tool call (arguments as a dict or the model's JSON text)."""
        from memstore.agent.tools import call_tool

        storage_user_id(user_id)  # a bad tenant id fails before anything else
        return await call_tool(self, name, arguments, user_id=user_id)

    async def prefetch(
        self, *, user_id: str | None = None, session_id: str | None = None, limit: int = 5
    ) -> list[ContextItem]:
        """The user's hottest items: last session's ending, most-accessed facts and episodes."""
        from memstore.agent.prefetch import prefetch_items

        return await prefetch_items(self, user_id=user_id, session_id=session_id, limit=limit)

    def record_access(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> None:
        """Count one access of each item (buffered; written in batches)."""
        if kind not in _ACCESS_KINDS:
            raise InvalidInput(f"kind must be one of {sorted(_ACCESS_KINDS)}")
        user = storage_user_id(user_id)
        self.access_tracker.record(user, kind, [i for i in item_ids if i], self.now())

    async def flush_access(self) -> None:
        """Write buffered access counts now (also happens on close and every few hundred)."""
        await self.access_tracker.flush()

    async def access_counts(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, int]:
        """Access counts of the given items, including not yet flushed ones."""
        user = storage_user_id(user_id)
        if not item_ids:
            return {}
        async with self._read(user) as session:
            counts = await AccessRepository(session=session).counts(user, kind, item_ids)
        for item_id, extra in self.access_tracker.pending(user, kind, item_ids).items():
            counts[item_id] = counts.get(item_id, 0) + extra
        return counts

    async def access_stats(
        self, *, user_id: str | None = None, kind: str | None = None, limit: int = 20
    ) -> list[AccessStat]:
        """The most-accessed items of a user (optionally of one kind), hottest first."""
        user = storage_user_id(user_id)
        if kind is not None and kind not in _ACCESS_KINDS:
            raise InvalidInput(f"kind must be one of {sorted(_ACCESS_KINDS)}")
        check_limit("limit", limit)
        await self.flush_access()
        async with self._read(user) as session:
            return await AccessRepository(session=session).hottest(user, kind, limit)

    async def export_stream(
        self, *, user_id: str | None = None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Every row of one tenant as ``(table, row)``, parents before children.

        Streamed from one consistent snapshot; rows are JSON-ready (datetimes
        as ISO 8601 with offset, bytes as base64) and omit ``user_id``.
        """
        user = storage_user_id(user_id)
        async with self._read(user, snapshot=True) as session:
            repo = TenantRepository(session=session)
            for table in reversed(tenant_tables()):
                async for row in repo.rows(user, table):
                    yield table.name, row

    async def export(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Everything stored for one tenant, table by table, JSON-serialisable."""
        dump = await self.export_header(user_id=user_id)
        tables: dict[str, list[dict[str, Any]]] = {name: [] for name in dump["tables"]}
        async for name, row in self.export_stream(user_id=user_id):
            tables[name].append(row)
        dump["tables"] = tables
        return dump

    async def import_(
        self, dump: Mapping[str, Any], *, user_id: str | _FromDump | None = FROM_DUMP
    ) -> dict[str, int]:
        """Load a dump made by :meth:`export` into an empty tenant; returns rows per table.

        The tenant is the dump's unless ``user_id`` names another. All or
        nothing: one transaction. :class:`Conflict` if the tenant already has
        data; :class:`InvalidInput` for a malformed dump. Works across backends.
        """
        if not isinstance(dump, Mapping) or not isinstance(dump.get("tables"), Mapping):
            raise InvalidInput("not a memstore export: expected a mapping with 'tables'")
        tables: Mapping[str, Any] = dump["tables"]
        for name, rows in tables.items():
            if not isinstance(rows, list):
                raise InvalidInput(f"tables[{name!r}] must be a list of rows")
        return await self.import_rows(
            dump, ((name, row) for name, rows in tables.items() for row in rows),
            user_id=user_id,
        )

    async def import_rows(
        self,
        header: Mapping[str, Any],
        rows: Iterable[tuple[str, Mapping[str, Any]]]
        | AsyncIterable[tuple[str, Mapping[str, Any]]],
        *,
        user_id: str | _FromDump | None = FROM_DUMP,
    ) -> dict[str, int]:
        """Streaming form of :meth:`import_`: ``rows`` as :meth:`export_stream` yields them.

        Rows are inserted in batches inside one transaction, so memory stays
        bounded and a failure part-way leaves the tenant empty. Parent rows must
        come before their children (export order).
        """
        if not isinstance(header, Mapping) or header.get("format") != EXPORT_FORMAT:
            raise InvalidInput(f"not a memstore export (format must be {EXPORT_FORMAT!r})")
        if isinstance(user_id, _FromDump):
            dumped = header.get("user_id")
            if dumped is not None and not isinstance(dumped, str):
                raise InvalidInput("the dump's user_id must be a string or null")
            user = storage_user_id(dumped)
        else:
            user = storage_user_id(user_id)
        counts: dict[str, int] = {}
        async with self._write(user) as session:
            repo = TenantRepository(session=session)
            if await repo.has_rows(user):
                raise Conflict(
                    f"tenant {public_user_id(user)!r} already has data; import needs an empty "
                    "tenant (forget it first, or import under another user_id)"
                )
            current: Table | None = None
            batch: list[Mapping[str, Any]] = []
            async for name, row in _aiter(rows):
                if current is None or name != current.name or len(batch) >= _IMPORT_BATCH:
                    if current is not None:
                        counts[current.name] = counts.get(current.name, 0) + (
                            await repo.insert_rows(user, current, batch)
                        )
                    current, batch = tenant_table(name), []
                batch.append(row)
            if current is not None:
                counts[current.name] = counts.get(current.name, 0) + (
                    await repo.insert_rows(user, current, batch)
                )
            for name in counts:
                await repo.advance_sequences(tenant_table(name))
        return counts



async def _aiter(items: Iterable[Any] | AsyncIterable[Any]) -> AsyncIterator[Any]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
