"""Episodes: remember agent turns and recall them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from memstore.core.documents import episode_search_text, episode_text
from memstore.core.forwarding import takes_options
from memstore.core.tenancy import storage_user_id
from memstore.core.validation import (
    check_aware,
    check_identifier,
    check_json,
    check_limit,
    check_text,
    check_time_range,
    is_number,
)
from memstore.embeddings.base import Embedder, embed_with_passages_checked
from memstore.errors import InvalidInput, NotFound
from memstore.recall.hybrid import HybridRecall, RecallArgs
from memstore.repositories.episodes import EpisodeRepository, latest_in_session
from memstore.rerankers.base import Reranker
from memstore.search.settings import EmbedderGuard
from memstore.services.access import AccessTracker
from memstore.services.base import Service
from memstore.services.limits import MAX_BATCH, MAX_EPISODE_ID_CHARS
from memstore.types import Episode, EpisodeMatch, Message, Role

__all__ = ["COPY_MIN_ROWS", "EpisodeRecallArgs", "EpisodeService"]

# Batches at least this large go to Postgres by COPY (a multi-row INSERT below:
# COPY's setup costs more than it saves on a few rows).
COPY_MIN_ROWS = 200


@dataclass(frozen=True, kw_only=True)
class EpisodeRecallArgs(RecallArgs):
    """The arguments of ``recall`` and ``recall_scored``: one signature for both."""

    time_range: tuple[datetime, datetime] | None = None
    recency_weight: float = 0.0
    min_score: float | None = None
    rerank: Reranker | bool | None = None


@dataclass(frozen=True)
class EpisodeVectors:
    whole: np.ndarray  # the whole text's unit vector
    passages: np.ndarray | None  # a long text's passages' unit vectors, one per row


class EpisodeService(Service):
    """Episodes: remember agent turns and recall them."""

    embedder: Embedder
    embedder_guard: EmbedderGuard
    hybrid: HybridRecall
    access_tracker: AccessTracker

    def _valid_episode(self, episode: Episode) -> tuple[str, Episode]:
        if not isinstance(episode, Episode):
            raise InvalidInput(f"expected an Episode, got {type(episode).__name__}")
        user = storage_user_id(episode.user_id, operation="episode.user_id")
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
        texts = [episode_text(e) for _, e in checked]
        vectors, passages = await embed_with_passages_checked(self.embedder, texts)
        now = self.db.now()
        items = [
            (user, e, EpisodeVectors(vector, passage))
            for (user, e), vector, passage in zip(checked, vectors, passages, strict=True)
        ]
        # With row-level security a statement may only touch the tenant its
        # transaction names, so tenants go one at a time; otherwise the whole
        # batch is one turn lookup and one multi-row INSERT.
        batches: list[list[tuple[str, Episode, EpisodeVectors]]] = [items]
        if self.db.rls:
            by_user: dict[str, list[tuple[str, Episode, EpisodeVectors]]] = {}
            for item in items:
                by_user.setdefault(item[0], []).append(item)
            batches = list(by_user.values())
        async with self.db.write() as session:
            await self.embedder_guard.claim(session)
            repo = EpisodeRepository(session=session)
            for batch in batches:
                if self.db.rls:
                    await self.db.set_tenant(session, batch[0][0])
                # The counter upsert also begins the transaction the COPY joins.
                turns = await repo.turn_counter([(u, e.session_id) for u, e, _ in batch])
                await repo.insert_rows(
                    [
                        repo.row(
                            u,
                            e,
                            now,
                            embedding=vectors.whole,
                            passages=vectors.passages,
                            search_text=episode_search_text(e),
                            turn=turns(u, e.session_id),
                        )
                        for u, e, vectors in batch
                    ],
                    copy=self._copies(len(batch)),
                )
        return [e.id for _, e in checked]

    def _copies(self, rows: int) -> bool:
        # COPY is refused on tables under row-level security, and an application's
        # own session (bind) may use another driver than asyncpg.
        db = self.db
        copies = db.backend.copies_rows
        return copies and not db.rls and db.joined_session is None and rows >= COPY_MIN_ROWS

    async def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode:
        """One episode of the tenant by id; :class:`NotFound` if it has none such."""
        user = storage_user_id(user_id)
        check_identifier("episode_id", episode_id)
        async with self.db.read(user) as session:
            found = await EpisodeRepository(session=session).get(user, episode_id)
        if found is None:
            raise NotFound(f"no episode {episode_id!r} for this user")
        self.access_tracker.record(user, "episode", [found.id], self.db.now())
        return found

    @takes_options(EpisodeRecallArgs)
    async def recall_scored(self, args: EpisodeRecallArgs) -> list[EpisodeMatch]:
        """Episodes ranked by hybrid recall, each with its relevance and the ranking's parts.

        ``score`` is the row's relevance to the query, 0..1 (the number
        ``min_score`` is compared with; the same scale as ``recall_facts_scored``).
        Rows come in ranking order, ``parts["ranking"]``: relative to this query's
        candidates, no fixed range. Its parts: ``dense`` (cosine), ``keyword``
        (BM25), their z-scores ``dense_z``/``keyword_z`` and sum ``fused``, the
        context terms ``neighbour`` and ``session``, ``recency`` when
        ``recency_weight`` is set (added as ``recency_weight * 2^(-age / 30
        days)``); and ``relevance`` (= ``score``). docs/RECALL.md, "Scores and the
        relevance floor". An empty query has no ranking: the newest episodes, score 0.

        ``rerank``: ``None`` uses the store's reranker (``MemoryStore.open(reranker=...)``,
        none by default), ``False`` none, or a :class:`~memstore.rerankers.Reranker` for
        this call. With one, the top ``rerank_candidates`` rows of the ranking (the
        store's, default 50) are re-ordered by its score, which each row carries as
        ``parts["rerank"]``; rows then come in that order. docs/RECALL.md, "A reranking
        stage".
        """
        return await self._ranked(args, with_relevance=True)

    @takes_options(EpisodeRecallArgs)
    async def recall(self, args: EpisodeRecallArgs) -> list[Episode]:
        """The ``limit`` episodes that best match ``query`` (hybrid: vector + keyword).

        ``min_score`` (0..1, default none) drops episodes less relevant than that,
        so an unrelated query returns fewer rows or none (0.35 suits the built-in
        embedders; docs/RECALL.md, "Scores and the relevance floor"). ``rerank``
        re-orders the top candidates by a reranker's score, as in :meth:`recall_scored`.
        """
        return [m.episode for m in await self._ranked(args, with_relevance=False)]

    async def _ranked(self, args: EpisodeRecallArgs, *, with_relevance: bool) -> list[EpisodeMatch]:
        user = storage_user_id(args.user_id)
        ranking = self.hybrid.ranking(
            args, args.min_score, args.rerank, with_relevance=with_relevance
        )
        if args.time_range is not None:
            check_time_range(args.time_range)
        weight = args.recency_weight
        if not is_number(weight) or weight < 0:
            raise InvalidInput("recency_weight must be a non-negative number")
        weight = float(weight)
        now = self.db.now()
        matches = await self.hybrid.episodes(
            user, args.query, ranking, time_range=args.time_range, now=now, recency_weight=weight
        )
        self.access_tracker.record(user, "episode", [m.episode.id for m in matches], now)
        return matches

    async def session_messages(
        self, session_id: str, *, user_id: str | None = None, limit: int = 20
    ) -> list[Message]:
        """The latest turns of a session as user/assistant messages, oldest first."""
        user = storage_user_id(user_id)
        check_identifier("session_id", session_id)
        check_limit("limit", limit)
        async with self.db.statement(user) as reader:
            episodes = await latest_in_session(reader, user, session_id, max(1, limit // 2))
        messages: list[Message] = []
        for ep in episodes:
            if ep.input:
                messages.append(Message(role=Role.USER, content=ep.input, episode_id=ep.id))
            if ep.output:
                messages.append(Message(role=Role.ASSISTANT, content=ep.output, episode_id=ep.id))
        return messages[-limit:]
