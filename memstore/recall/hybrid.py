"""The recall pipeline: embed the query, then search.

Episodes are recalled by one statement per backend
(memstore/recall/statement.py). Facts, always filtered by valid
and transaction time and far fewer per tenant, gather candidates per signal
here and fuse them in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.lexical import BM25_B, BM25_K1, bm25_scores, query_terms
from memstore.db.unit import Reader
from memstore.embeddings.base import Embedder, embed_checked
from memstore.recall.fusion import RecallTuning, standardise
from memstore.recall.search import (
    FACTS,
    EpisodeSearchBackend,
    RecallTable,
    SearchBackend,
    corpus_stats,
)
from memstore.recall.statement import EpisodeRecall, Fusion, RecallHit

__all__ = ["HybridRecall", "Scored"]

# Keyword candidates scored per query: BM25 is exact while a tenant has fewer
# rows matching any query term than this.
KEYWORD_CAP = 5_000


@dataclass
class Scored:
    id: str
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)


class HybridRecall:
    def __init__(
        self,
        *,
        embedder: Embedder,
        backend: SearchBackend,
        episode_search: EpisodeSearchBackend,
        tuning: RecallTuning | None = None,
    ) -> None:
        self.embedder = embedder
        self.backend = backend
        self.episode_search = episode_search
        self.tuning = tuning or RecallTuning()

    def one_statement(self, user_id: str, time_range: tuple[datetime, datetime] | None) -> bool:
        """Whether :meth:`episodes` for the tenant is one statement, needing no transaction."""
        return self.episode_search.one_statement(user_id, time_range)

    async def embed_query(self, query: str) -> np.ndarray:
        vectors: np.ndarray = await embed_checked(self.embedder, [query])
        return np.asarray(vectors[0], dtype=np.float32)

    async def _signals(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        query: str,
        qvec: np.ndarray,
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> tuple[dict[str, Scored], float]:
        """Candidates with their fused score, and the fused score of a non-candidate."""
        t = self.tuning
        depth = max(t.depth, limit)
        dense = await self.backend.dense(session, model, user_id, qvec, depth, where)
        terms = query_terms(query)
        keyword: dict[str, float] = {}
        if terms:
            docs = await self.backend.keyword(session, model, user_id, terms, KEYWORD_CAP, where)
            if docs:
                total, avg_chars = await corpus_stats(session, model, user_id, where)
                keyword = bm25_scores(terms, docs, total_docs=total, avg_chars=avg_chars)
                keyword = dict(sorted(keyword.items(), key=lambda kv: -kv[1])[:depth])
        dense_z, dense_floor = standardise(dense)
        keyword_z, keyword_floor = standardise(keyword)
        floor = t.dense_weight * dense_floor + t.keyword_weight * keyword_floor
        scored: dict[str, Scored] = {}
        for doc_id in dense.keys() | keyword.keys():
            zd = dense_z.get(doc_id, dense_floor)
            zk = keyword_z.get(doc_id, keyword_floor)
            fused = t.dense_weight * zd + t.keyword_weight * zk
            scored[doc_id] = Scored(
                doc_id,
                fused,
                {
                    "dense": dense.get(doc_id, 0.0),
                    "keyword": keyword.get(doc_id, 0.0),
                    "dense_z": zd,
                    "keyword_z": zk,
                    "fused": fused,
                },
            )
        return scored, floor

    async def episodes(
        self,
        session: Reader,
        user_id: str,
        query: str,
        *,
        time_range: tuple[datetime, datetime] | None,
        now: datetime,
        recency_weight: float,
        qvec: np.ndarray,
        limit: int,
    ) -> list[RecallHit]:
        """The ``limit`` best episodes with their scores' parts, best first."""
        t = self.tuning
        request = EpisodeRecall(
            user_id=user_id,
            terms=tuple(query_terms(query)),
            time_range=time_range,
            now=now,
            recency_weight=recency_weight,
            limit=limit,
            fusion=Fusion(
                depth=max(t.depth, limit),
                dense_weight=t.dense_weight,
                keyword_weight=t.keyword_weight,
                neighbour_weight=t.neighbour_weight,
                width=t.neighbour_width,
                session_weight=t.session_weight,
                session_top=t.session_top,
                expand=t.expand,
                half_life_days=t.recency_half_life_days,
                passage_pool=t.passage_pool,
            ),
        )
        return await self.episode_search.recall(session, request, qvec, k1=BM25_K1, b=BM25_B)

    async def facts(
        self,
        session: AsyncSession,
        user_id: str,
        query: str,
        *,
        where: Sequence[ColumnElement[bool]],
        qvec: np.ndarray,
        limit: int,
    ) -> list[Scored]:
        scored, _ = await self._signals(session, FACTS, user_id, query, qvec, where, limit)
        return sorted(scored.values(), key=lambda s: -s.score)
