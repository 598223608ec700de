"""The recall pipeline: embed the query, gather candidates per signal, fuse, add context."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.embeddings.base import Embedder, embed_checked
from memstore.lexical import bm25_scores, query_terms
from memstore.recall.fusion import RecallTuning, standardise
from memstore.repositories import search
from memstore.repositories.search import (
    EPISODES,
    FACTS,
    RecallTable,
    SearchBackend,
    corpus_stats,
    neighbours,
    occurred_at,
    occurred_between,
)

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
        self, *, embedder: Embedder, backend: SearchBackend, tuning: RecallTuning | None = None
    ) -> None:
        self.embedder = embedder
        self.backend = backend
        self.tuning = tuning or RecallTuning()

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
        session: AsyncSession,
        user_id: str,
        query: str,
        *,
        time_range: tuple[datetime, datetime] | None,
        now: datetime,
        recency_weight: float,
        qvec: np.ndarray,
        limit: int,
    ) -> list[Scored]:
        """Every candidate episode with its final score, best first (ties: caller sorts)."""
        where: list[ColumnElement[bool]] = []
        if time_range is not None:
            where.append(occurred_between(time_range))
        scored, floor = await self._signals(session, EPISODES, user_id, query, qvec, where, limit)
        if scored:
            await self._add_context(session, user_id, scored, floor, where)
        if recency_weight:
            await self._add_recency(session, user_id, scored, now, recency_weight)
        return sorted(scored.values(), key=lambda s: -s.score)

    async def _add_context(
        self,
        session: AsyncSession,
        user_id: str,
        scored: dict[str, Scored],
        floor: float,
        where: Sequence[ColumnElement[bool]],
    ) -> None:
        t = self.tuning
        positions = await search.positions(session, user_id, list(scored), where)
        best = sorted(scored.values(), key=lambda s: -s.score)[: t.expand]
        placed = {
            doc_id: (sid, turn) for doc_id, (sid, turn) in positions.items() if turn is not None
        }
        wanted = {
            (placed[s.id][0], placed[s.id][1] + d)
            for s in best
            if s.id in placed
            for d in range(-t.neighbour_width, t.neighbour_width + 1)
            if d
        }
        wanted -= set(placed.values())
        for doc_id, pos in (await neighbours(session, user_id, wanted, where)).items():
            positions[doc_id] = pos
            placed[doc_id] = pos
            scored[doc_id] = Scored(
                doc_id,
                floor,
                {
                    "dense": 0.0,
                    "keyword": 0.0,
                    "dense_z": 0.0,
                    "keyword_z": 0.0,
                    "fused": floor,
                },
            )
        by_place = {pos: doc_id for doc_id, pos in placed.items()}
        base = {doc_id: s.score for doc_id, s in scored.items()}
        for doc_id, s in scored.items():
            near = 0.0
            if doc_id in placed:
                session_id, turn = placed[doc_id]
                for d in range(-t.neighbour_width, t.neighbour_width + 1):
                    other = by_place.get((session_id, turn + d)) if d else None
                    if other is not None:
                        near = max(near, base[other])
            s.parts["neighbour"] = t.neighbour_weight * near
            s.score = base[doc_id] + s.parts["neighbour"]
        sessions: dict[str, list[float]] = defaultdict(list)
        for doc_id, s in scored.items():
            if doc_id in positions:
                sessions[positions[doc_id][0]].append(s.score)
        session_score = {}
        for session_id, values in sessions.items():
            top = sorted(values, reverse=True)[: t.session_top]
            top += [floor] * (t.session_top - len(top))
            session_score[session_id] = sum(top) / len(top)
        for doc_id, s in scored.items():
            s.parts["session"] = (
                t.session_weight * session_score[positions[doc_id][0]]
                if doc_id in positions
                else 0.0
            )
            s.score += s.parts["session"]

    async def _add_recency(
        self,
        session: AsyncSession,
        user_id: str,
        scored: dict[str, Scored],
        now: datetime,
        weight: float,
    ) -> None:
        half_life = self.tuning.recency_half_life_days
        for doc_id, occurred in (await occurred_at(session, user_id, list(scored))).items():
            age_days = max(0.0, (now - occurred).total_seconds() / 86_400)
            recency = math.exp(-math.log(2) * age_days / half_life)
            scored[doc_id].parts["recency"] = recency
            scored[doc_id].score += weight * recency

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
