"""SQLite: FTS5 finds keyword candidates; vectors are scored exactly with numpy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, Float, String, TableClause, column, select, table, text
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.lexical import fts5_query, is_prefix
from memstore.db.unit import Reader
from memstore.recall.search import RecallTable, row_text
from memstore.recall.statement import (
    Dialect,
    EpisodeRecall,
    RecallHit,
    dense_only,
    episode_statement,
    hits,
    shared_params,
)
from memstore.recall.vector_cache import VectorCache

__all__ = ["SQLITE_DIALECT", "EpisodeSearch", "SqliteSearch", "term_range"]


def _fts_tables(model: RecallTable) -> tuple[TableClause, TableClause]:
    name = model.__tablename__
    fts = table(f"{name}_fts", column("rowid"), column("text"), column("rank"))
    keys = table(f"{name}_fts_keys", column("rowid"), column("user_id"), column("id"))
    return fts, keys


class SqliteSearch:
    """Exact search over one tenant's rows; SQLite is the embedded, single-node backend."""

    async def dense(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        query: np.ndarray,
        depth: int,
        where: Sequence[ColumnElement[bool]],
    ) -> dict[str, float]:
        stmt = select(model.id, model.embedding).where(
            model.user_id == user_id, model.embedding.is_not(None), *where
        )
        rows = (await session.execute(stmt)).all()
        if not rows:
            return {}
        ids = [r[0] for r in rows]
        matrix = np.stack([r[1] for r in rows])
        sims = matrix @ query.astype(np.float32)
        order = np.argsort(-sims, kind="stable")[:depth]
        return {ids[i]: float(sims[i]) for i in order}

    async def keyword(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        terms: Sequence[str],
        cap: int,
        where: Sequence[ColumnElement[bool]],
    ) -> list[tuple[str, str]]:
        if not terms:
            return []
        fts, keys = _fts_tables(model)
        stmt = (
            select(model.id, row_text(model))
            .select_from(fts)
            .join(keys, keys.c.rowid == fts.c.rowid)
            .join(model, (model.user_id == keys.c.user_id) & (model.id == keys.c.id))
            .where(
                text(f"{model.__tablename__}_fts MATCH :fts_query").bindparams(
                    fts_query=fts5_query(terms)
                ),
                keys.c.user_id == user_id,
                *where,
            )
            .order_by(fts.c.rank)
            .limit(cap)
        )
        return [(r[0], r[1]) for r in (await session.execute(stmt)).all()]


# Term counts from the FTS5 index's instance list (fts5vocab, revision 0008):
# each term is a range of index terms, [lo, hi), so a prefix term finds every
# word it begins and the scan is a seek, not a pass over the vocabulary.
# CROSS JOIN fixes the loop order (SQLite's rule): with the vocabulary table
# outside, the planner would read every instance of every term in the store.
_SQLITE_TERM_COUNTS = """
terms AS (
  SELECT CAST(key AS INTEGER) + 1 AS i, json_extract(value, '$[0]') AS lo,
         json_extract(value, '$[1]') AS hi
  FROM json_each(:terms)
),
hits AS (
  SELECT k.id, t.i, count(*) AS n
  FROM terms AS t
  CROSS JOIN episodes_fts_instances AS v ON v.term >= t.lo AND v.term < t.hi
  JOIN episodes_fts_keys AS k ON k.rowid = v.doc
  WHERE k.user_id = :user_id
  GROUP BY k.id, t.i
),
tf AS (
  SELECT h.id, length(coalesce(e.search_text, '')) AS dl, h.i, h.n
  FROM hits AS h JOIN episodes AS e ON e.user_id = :user_id AND e.id = h.id
  WHERE 1 = 1 {time_filter}
),"""


def term_range(term: str) -> tuple[str, str]:
    """The index terms ``term`` matches, as [lo, hi): words it begins, or itself."""
    if is_prefix(term):
        return term, term[:-1] + chr(ord(term[-1]) + 1)
    return term, term + "\x01"


SQLITE_DIALECT = Dialect(
    dense="SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:dense)",
    term_counts="",
    stddev="sqrt(max(avg({x} * {x}) - avg({x}) * avg({x}), 0))",
    positive="max({x}, 0)",
    greatest="max",
    float="REAL",
    age_days="max(julianday(:now) - julianday(e.occurred_at), 0)",
    time_filter="AND (:t0 IS NULL OR e.occurred_at BETWEEN :t0 AND :t1)",
    # the few best hits drive the seek into the (user, session, turn) index
    join_in_order="CROSS JOIN",
)


class EpisodeSearch:
    """SQLite episode recall: nearest vectors from the cached matrix, the rest in one statement."""

    def __init__(self, *, cache: VectorCache) -> None:
        self.cache = cache

    def one_statement(self, user_id: str, time_range: tuple[datetime, datetime] | None) -> bool:
        """Never: the search version and the statement must read one snapshot."""
        return False

    async def recall(
        self,
        session: Reader,
        request: EpisodeRecall,
        qvec: np.ndarray,
        *,
        k1: float,
        b: float,
    ) -> list[RecallHit]:
        vectors = await self.cache.vectors(session, request.user_id)
        fusion = request.fusion
        dense = vectors.nearest(qvec, fusion.depth, request.time_range, fusion.pool)
        dialect = SQLITE_DIALECT
        values: dict[str, Any] = {**shared_params(request), "dense": json.dumps(dense)}
        types: dict[str, Any] = {"dense": String()}
        only_dense = dense_only(request)
        if request.terms and not only_dense:
            dialect = replace(
                dialect, term_counts=_SQLITE_TERM_COUNTS.format(time_filter=dialect.time_filter)
            )
            values.update(
                terms=json.dumps([term_range(t) for t in request.terms]),
                corpus_docs=float(vectors.rows),
                corpus_chars=vectors.mean_chars,
                k1=k1,
                b=b,
            )
            types.update(
                terms=String(), corpus_docs=Float(), corpus_chars=Float(), k1=Float(), b=Float()
            )
        stmt = episode_statement(dialect, types, fusion=request.fusion, dense_only=only_dense)
        rows = await session.execute(stmt, values)
        return hits(rows, recency=bool(request.recency_weight))

    def drop(self, user_id: str) -> None:
        self.cache.drop(user_id)
