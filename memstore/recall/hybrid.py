"""The recall pipeline, the same for episodes and facts.

query -> terms (tokenised once) -> query vector -> the backend's one ranked
statement (memstore/search/) -> rows -> [the reranker's order over the top N]
-> relevance and the ``min_score`` cut.

The pipeline chooses where the statement runs (one statement needs no
transaction; the HNSW plans and SQLite's cached vectors do) and never builds
SQL itself: everything below the query vector is memstore.search's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import TypeVar

import numpy as np

from memstore.core.documents import episode_search_text, fact_text
from memstore.core.lexical import query_terms
from memstore.core.tenancy import TenantId
from memstore.core.validation import check_limit, check_text
from memstore.db.unit import Database
from memstore.embeddings.base import Embedder, queries_checked
from memstore.errors import InvalidInput
from memstore.recall.relevance import check_min_score, relevance
from memstore.recall.rerank import episode_rerank_text, reranked
from memstore.repositories.episodes import EpisodeRepository
from memstore.rerankers.base import (
    DEFAULT_RERANK_CANDIDATES,
    Reranker,
    check_rerank_candidates,
    check_reranker,
)
from memstore.search.facts import FactSearch
from memstore.search.statement import EpisodeRecall, FactRecall, Recall
from memstore.search.tables import EpisodeSearchBackend
from memstore.search.tuning import RecallTuning
from memstore.types import Episode, EpisodeMatch, Fact, FactMatch

__all__ = ["HybridRecall", "Ranking", "RecallArgs", "one_embedding_per_query"]

_Row = TypeVar("_Row", Episode, Fact)


@dataclass(eq=False)
class _QueryVectors:
    """Query vectors embedded inside one :func:`one_embedding_per_query` block."""

    by_query: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)
    # Held while one of the block's tasks embeds, so a concurrent recall of the
    # same query waits for that vector instead of embedding it again.
    embedding: asyncio.Lock = field(default_factory=asyncio.Lock)


_SHARED: ContextVar[_QueryVectors | None] = ContextVar("memstore_query_vectors", default=None)


@contextmanager
def one_embedding_per_query() -> Iterator[None]:
    """Recalls inside this block, by this task and the tasks it starts meanwhile, embed
    each query text once: a turn's context recalls facts and episodes for the same
    query, concurrently, and again with a larger limit while more would fit."""
    token = _SHARED.set(_QueryVectors())
    try:
        yield
    finally:
        _SHARED.reset(token)


@dataclass(frozen=True)
class RecallArgs:
    """The arguments every recall of the facade takes first; each kind's subclass adds its own.

    A kind's plain and scored recall share its subclass (``takes_options``): one
    signature for both. A subclass declares its keyword-only fields, then
    ``min_score`` and ``rerank``, which come last in the public signatures.
    """

    query: str
    _: KW_ONLY
    user_id: str | None = None
    limit: int = 5


@dataclass(frozen=True)
class Ranking:
    """How a recall cuts its ranking: at most ``limit`` rows, none below ``floor``.

    ``rerank`` re-orders the top candidates first; ``with_relevance`` asks for
    every row's relevance even without a floor (the scored recalls report it).
    """

    limit: int
    floor: float | None
    with_relevance: bool
    rerank: Reranker | None


def _cut(
    ranked: Sequence[tuple[_Row, float, dict[str, float]]],
    request: Recall,
    text_of: Callable[[_Row], str],
    ranking: Ranking,
) -> list[tuple[_Row, float, dict[str, float]]]:
    """Rows with their relevance (``score``) and parts, the ``floor`` applied, in ranking order.

    The ranking score is relative to this query's candidates (any sign, no
    range), so it is reported as a part; ``score`` is the row's relevance.
    Tokenising every returned row costs a few microseconds each: a plain recall
    without a floor, which drops the scores, does not pay for it.
    """
    floor = ranking.floor
    scored: list[tuple[_Row, float, dict[str, float]]] = []
    for row, order, order_parts in ranked:
        parts = {**order_parts, "ranking": order}
        if ranking.with_relevance or floor is not None:
            parts["relevance"] = relevance(request.terms, text_of(row), parts.get("dense", 0.0))
        score = parts.get("relevance", 0.0)
        if floor is None or score >= floor:
            scored.append((row, score, parts))
    return scored[: ranking.limit]


@dataclass(eq=False, kw_only=True)
class HybridRecall:
    """Recall for one store: its database, embedder, backend searches and tuning."""

    db: Database
    embedder: Embedder
    episode_search: EpisodeSearchBackend
    fact_search: FactSearch
    tuning: RecallTuning = field(default_factory=RecallTuning)
    reranker: Reranker | None = None
    rerank_candidates: int = DEFAULT_RERANK_CANDIDATES

    def __post_init__(self) -> None:
        self.reranker = check_reranker("reranker", self.reranker)
        self.rerank_candidates = check_rerank_candidates(self.rerank_candidates)

    def reranker_for(self, rerank: Reranker | bool | None) -> Reranker | None:
        """The reranker a call uses: the store's (``None``), none (``False``) or its own."""
        if rerank is None:
            return self.reranker
        if rerank is False:
            return None
        if rerank is True:
            raise InvalidInput(
                "rerank=True is not a reranker: pass a Reranker, False (no reranking), or "
                "None (the store's reranker, set with MemoryStore.open(reranker=...))"
            )
        return check_reranker("rerank", rerank)

    def ranking(
        self,
        args: RecallArgs,
        min_score: float | None,
        rerank: Reranker | bool | None,
        *,
        with_relevance: bool,
    ) -> Ranking:
        """A recall's checked query and cut; ``rerank`` as :meth:`reranker_for` takes it."""
        check_text("query", args.query, allow_empty=True, max_chars=10_000)
        check_limit("limit", args.limit)
        floor = check_min_score(min_score)
        return Ranking(args.limit, floor, with_relevance, self.reranker_for(rerank))

    def depth(self, limit: int, reranker: Reranker | None) -> int:
        """Rows to ask the statement for: ``limit``, or the reranker's candidates."""
        return limit if reranker is None else max(limit, self.rerank_candidates)

    async def embed_query(self, query: str) -> np.ndarray:
        shared = _SHARED.get()
        if shared is None:
            return await self._embed_query(query)
        key = (id(self.embedder), query)
        async with shared.embedding:
            vector = shared.by_query.get(key)
            if vector is None:
                vector = shared.by_query[key] = await self._embed_query(query)
        return vector

    async def _embed_query(self, query: str) -> np.ndarray:
        # The query form (QueryEmbedder) where the model has one: stored rows are documents.
        vectors: np.ndarray = await queries_checked(self.embedder, [query])
        return np.asarray(vectors[0], dtype=np.float32)

    async def episodes(
        self,
        user_id: TenantId,
        query: str,
        ranking: Ranking,
        *,
        time_range: tuple[datetime, datetime] | None,
        now: datetime,
        recency_weight: float,
    ) -> list[EpisodeMatch]:
        """The ``limit`` best episodes (fewer under a floor), best first.

        An empty query has no ranking: the newest episodes, score 0 (and no
        reranking: there is nothing to score the rows against). ``ranking.rerank``
        re-orders the top ``rerank_candidates`` first.
        """
        limit, floor, rerank = ranking.limit, ranking.floor, ranking.rerank
        if not query.strip():
            if floor is not None and floor > 0:
                return []  # an empty query is about nothing: no row reaches a positive floor
            async with self.db.read(user_id) as session:
                newest = await EpisodeRepository(session=session).keyword_candidates(
                    user_id, [], time_range=time_range, limit=limit
                )
            return [EpisodeMatch(episode=e, score=0.0, parts={"relevance": 0.0}) for e in newest]
        request = EpisodeRecall(
            user_id=user_id,
            terms=tuple(query_terms(query)),
            qvec=await self.embed_query(query),
            limit=self.depth(limit, rerank),
            tuning=self.tuning,
            time_range=time_range,
            now=now,
            recency_weight=recency_weight,
        )
        search = self.episode_search
        one = search.one_statement(user_id, time_range)
        async with self.db.statement(user_id) if one else self.db.read(user_id) as session:
            hits = await search.recall(session, request)
        ranked = [(h.episode, h.score, h.parts) for h in hits[: request.limit]]
        if rerank is not None:
            ranked = await reranked(rerank, query, ranked, episode_rerank_text)
        kept = _cut(ranked, request, episode_search_text, ranking)
        return [EpisodeMatch(episode=e, score=s, parts=p) for e, s, p in kept]

    async def facts(
        self,
        user_id: TenantId,
        query: str,
        ranking: Ranking,
        *,
        valid_at: datetime,
        known_at: datetime,
    ) -> list[FactMatch]:
        """The ``limit`` best facts true at ``valid_at`` as believed at ``known_at``.

        Ties go to the most recently recorded; an empty query has no ranking:
        the most recently recorded facts, score 0.
        """
        limit, floor, rerank = ranking.limit, ranking.floor, ranking.rerank
        if not query.strip():
            if floor:
                return []  # an empty query is about nothing: no fact reaches a positive floor
            async with self.db.statement(user_id) as session:
                newest = await self.fact_search.newest(
                    session, user_id, valid_at=valid_at, known_at=known_at, limit=limit
                )
            return [FactMatch(fact=f, score=0.0, parts={"relevance": 0.0}) for f in newest]
        request = FactRecall(
            user_id=user_id,
            terms=tuple(query_terms(query)),
            qvec=await self.embed_query(query),
            # A floor drops rows after the ranking: look a little further down it.
            limit=self.depth(limit if floor is None else limit * 2 + 10, rerank),
            tuning=self.tuning,
            valid_at=valid_at,
            known_at=known_at,
        )
        # SQLite reads the vectors, then runs the statement: one snapshot for both.
        one = self.fact_search.one_statement
        async with self.db.statement(user_id) if one else self.db.read(user_id) as session:
            hits = await self.fact_search.recall(session, request)
        ranked = [(h.fact, h.score, h.parts) for h in hits]
        if rerank is not None:
            ranked = await reranked(rerank, query, ranked, fact_text)
        kept = _cut(ranked, request, fact_text, ranking)
        return [FactMatch(fact=f, score=s, parts=p) for f, s, p in kept]
