"""The recall pipeline, the same for episodes and facts.

query -> terms (tokenised once) -> query vector -> the backend's one ranked
statement (memstore/search/) -> rows -> [the reranker's order over the top N]
-> relevance and the ``min_score`` cut.

The pipeline chooses where the statement runs (one statement needs no
transaction; the HNSW plans and SQLite's cached vectors do) and never builds
SQL itself: everything below the query vector is memstore.search's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

import numpy as np

from memstore.core.documents import episode_search_text, fact_text
from memstore.core.lexical import query_terms
from memstore.core.tenancy import TenantId
from memstore.db.unit import Database
from memstore.embeddings.base import Embedder, queries_checked
from memstore.errors import InvalidInput
from memstore.recall.relevance import relevance
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

__all__ = ["HybridRecall"]

_Row = TypeVar("_Row", Episode, Fact)


def _cut(
    ranked: Sequence[tuple[_Row, float, dict[str, float]]],
    request: Recall,
    text_of: Callable[[_Row], str],
    *,
    floor: float | None,
    with_relevance: bool,
    limit: int,
) -> list[tuple[_Row, float, dict[str, float]]]:
    """Rows with their relevance (``score``) and parts, the ``floor`` applied, in ranking order.

    The ranking score is relative to this query's candidates (any sign, no
    range), so it is reported as a part; ``score`` is the row's relevance.
    Tokenising every returned row costs a few microseconds each: a plain recall
    without a floor, which drops the scores, does not pay for it.
    """
    scored: list[tuple[_Row, float, dict[str, float]]] = []
    for row, ranking, ranking_parts in ranked:
        parts = {**ranking_parts, "ranking": ranking}
        if with_relevance or floor is not None:
            parts["relevance"] = relevance(request.terms, text_of(row), parts.get("dense", 0.0))
        score = parts.get("relevance", 0.0)
        if floor is None or score >= floor:
            scored.append((row, score, parts))
    return scored[:limit]


class HybridRecall:
    """Recall for one store: its database, embedder, backend searches and tuning."""

    def __init__(
        self,
        *,
        db: Database,
        embedder: Embedder,
        episode_search: EpisodeSearchBackend,
        fact_search: FactSearch,
        tuning: RecallTuning | None = None,
        reranker: Reranker | None = None,
        rerank_candidates: int = DEFAULT_RERANK_CANDIDATES,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.episode_search = episode_search
        self.fact_search = fact_search
        self.tuning = tuning or RecallTuning()
        self.reranker = check_reranker("reranker", reranker)
        self.rerank_candidates = check_rerank_candidates(rerank_candidates)

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

    def depth(self, limit: int, reranker: Reranker | None) -> int:
        """Rows to ask the statement for: ``limit``, or the reranker's candidates."""
        return limit if reranker is None else max(limit, self.rerank_candidates)

    async def embed_query(self, query: str) -> np.ndarray:
        # The query form (QueryEmbedder) where the model has one: stored rows are documents.
        vectors: np.ndarray = await queries_checked(self.embedder, [query])
        return np.asarray(vectors[0], dtype=np.float32)

    async def episodes(
        self,
        user_id: TenantId,
        query: str,
        *,
        time_range: tuple[datetime, datetime] | None,
        now: datetime,
        recency_weight: float,
        limit: int,
        floor: float | None,
        with_relevance: bool,
        rerank: Reranker | None = None,
    ) -> list[EpisodeMatch]:
        """The ``limit`` best episodes (fewer under a floor), best first.

        An empty query has no ranking: the newest episodes, score 0 (and no
        reranking: there is nothing to score the rows against). ``rerank`` (from
        :meth:`reranker_for`) re-orders the top ``rerank_candidates`` first.
        """
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
        kept = _cut(
            ranked,
            request,
            episode_search_text,
            floor=floor,
            with_relevance=with_relevance,
            limit=limit,
        )
        return [EpisodeMatch(episode=e, score=s, parts=p) for e, s, p in kept]

    async def facts(
        self,
        user_id: TenantId,
        query: str,
        *,
        valid_at: datetime,
        known_at: datetime,
        limit: int,
        floor: float | None,
        with_relevance: bool,
        rerank: Reranker | None = None,
    ) -> list[FactMatch]:
        """The ``limit`` best facts true at ``valid_at`` as believed at ``known_at``.

        Ties go to the most recently recorded; an empty query has no ranking:
        the most recently recorded facts, score 0.
        """
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
        kept = _cut(
            ranked, request, fact_text, floor=floor, with_relevance=with_relevance, limit=limit
        )
        return [FactMatch(fact=f, score=s, parts=p) for f, s, p in kept]
