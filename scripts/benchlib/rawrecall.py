"""Hand-written per-tenant recall queries: the baselines of scenarios 2, 3 and 6."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["PgRecall", "SqliteRecall", "rrf"]

DEPTH = 50  # candidates per signal in the hand-written hybrid query
RRF_K = 60

# What the GIN index covers, so that the index can be used.
_TSV = "search_fts"  # the stored tsvector column (migration 0009)

VEC_PLANNER = "SELECT * FROM episodes WHERE user_id = $1 ORDER BY embedding <=> $2 LIMIT $3"
# `+ 0` keeps HNSW out of the plan: the tenant's rows via the user_id btree, sorted.
VEC_EXACT = "SELECT * FROM episodes WHERE user_id = $1 ORDER BY (embedding <=> $2) + 0 LIMIT $3"
HYBRID = f"""
WITH v AS (
    SELECT id, row_number() OVER (ORDER BY d) AS r FROM (
        SELECT id, (embedding <=> $2) + 0 AS d FROM episodes
        WHERE user_id = $1 ORDER BY d LIMIT {DEPTH}) x),
k AS (
    SELECT id, row_number() OVER (ORDER BY s DESC) AS r FROM (
        SELECT id, ts_rank_cd({_TSV}, q) AS s
        FROM episodes, to_tsquery('simple', $3) q
        WHERE user_id = $1 AND {_TSV} @@ q
        ORDER BY s DESC LIMIT {DEPTH}) y),
f AS (
    SELECT id, sum(1.0 / ({RRF_K} + r)) AS score
    FROM (SELECT * FROM v UNION ALL SELECT * FROM k) u
    GROUP BY id ORDER BY score DESC, id LIMIT $4)
SELECT e.* FROM f JOIN episodes e ON e.user_id = $1 AND e.id = f.id ORDER BY f.score DESC, e.id
"""


def rrf(*rankings: Sequence[str], limit: int) -> list[str]:
    score: dict[str, float] = {}
    for ranking in rankings:
        for r, doc in enumerate(ranking, start=1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (RRF_K + r)
    return sorted(score, key=lambda d: (-score[d], d))[:limit]


def words(text: str) -> list[str]:
    return [w for w in text.split() if w.isalnum()]


class PgRecall:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def vector(
        self, user: str, vec: np.ndarray, k: int = 10, *, exact: bool = True
    ) -> list[str]:
        rows = await self.conn.fetch(VEC_EXACT if exact else VEC_PLANNER, user, vec, k)
        return [r["id"] for r in rows]

    async def vector_hnsw(self, user: str, vec: np.ndarray, k: int, ef: int) -> list[str]:
        """The planner's HNSW plan with ``ef_search`` raised, as memstore sets it."""
        async with self.conn.transaction():
            await self.conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
            rows = await self.conn.fetch(VEC_PLANNER, user, vec, k)
        return [r["id"] for r in rows]

    async def hybrid(self, user: str, text: str, vec: np.ndarray, k: int = 10) -> list[str]:
        query = " | ".join(f"{w}:*" for w in words(text))
        rows = await self.conn.fetch(HYBRID, user, vec, query, k)
        return [r["id"] for r in rows]


class SqliteRecall:
    """SQLite has no vector SQL: the hand-written path is SQL + numpy, as in memstore."""

    def __init__(self, db: Any) -> None:
        self.db = db  # raw.SqliteQueries

    async def _dense(self, user: str, vec: np.ndarray, depth: int) -> list[str]:
        rows = await self.db.fetch(
            "SELECT id, embedding FROM episodes WHERE user_id = ? AND embedding IS NOT NULL",
            (user,),
        )
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), -1
        )
        sims = matrix @ vec
        top = np.argsort(-sims)[:depth]
        return [rows[i][0] for i in top]

    async def _rows(self, user: str, ids: list[str]) -> list[str]:
        marks = ",".join("?" for _ in ids)
        rows = await self.db.fetch(
            f"SELECT * FROM episodes WHERE user_id = ? AND id IN ({marks})", (user, *ids)
        )
        found = {r[1]: r for r in rows}
        return [i for i in ids if i in found]

    async def vector(self, user: str, vec: np.ndarray, k: int = 10) -> list[str]:
        return await self._rows(user, await self._dense(user, vec, k))

    async def hybrid(self, user: str, text: str, vec: np.ndarray, k: int = 10) -> list[str]:
        match = " OR ".join(f"{w}*" for w in words(text))
        keyword = [
            r[0]
            for r in await self.db.fetch(
                "SELECT k.id FROM episodes_fts f JOIN episodes_fts_keys k ON k.rowid = f.rowid "
                "WHERE episodes_fts MATCH ? AND k.user_id = ? ORDER BY f.rank LIMIT ?",
                (match, user, DEPTH),
            )
        ]
        dense = await self._dense(user, vec, DEPTH)
        return await self._rows(user, rrf(dense, keyword, limit=k))
