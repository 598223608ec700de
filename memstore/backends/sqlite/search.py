"""SQLite: FTS5 finds keyword candidates; vectors are scored exactly with numpy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, String, select

from memstore.core.lexical import is_prefix
from memstore.db.unit import Reader
from memstore.models.search import answer_length, document
from memstore.search.episodes import RecallHit, ranked
from memstore.search.statement import Dialect, EpisodeRecall, FactRecall
from memstore.search.tables import FACTS, EpisodeSearchBackend, RecallTable
from memstore.search.vector_cache import VectorCache

__all__ = [
    "SEARCH",
    "SQLITE_DIALECT",
    "EpisodeSearch",
    "SqliteSearch",
    "sqlite_keyword_params",
    "sqlite_term_counts",
    "term_range",
]


class SqliteSearch:
    """Exact search over one tenant's rows; SQLite is the embedded, single-node backend."""

    async def dense(
        self,
        session: Reader,
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
  CROSS JOIN {table}_fts_instances AS v ON v.term >= t.lo AND v.term < t.hi
  JOIN {table}_fts_keys AS k ON k.rowid = v.doc
  WHERE k.user_id = :user_id
  GROUP BY k.id, t.i
),
tf AS (
  SELECT h.id, length({doc}) AS dl, {answer} AS al, h.i, h.n
  FROM hits AS h JOIN {table} AS e ON e.user_id = :user_id AND e.id = h.id
  WHERE 1 = 1 {filter}
),"""


def sqlite_term_counts(table: str, row_filter: str) -> str:
    """The CTEs ending in ``tf`` over ``table AS e`` rows kept by ``row_filter`` (AND ...)."""
    return _SQLITE_TERM_COUNTS.format(
        table=table,
        doc=document(table, prefix="e."),
        answer=answer_length(table, prefix="e."),
        filter=row_filter,
    )


def sqlite_keyword_params(terms: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Values and types of :func:`sqlite_term_counts`' parameters."""
    return {"terms": json.dumps([term_range(t) for t in terms])}, {"terms": String()}


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
    least="min",
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

    async def recall(self, session: Reader, request: EpisodeRecall) -> list[RecallHit]:
        vectors = await self.cache.vectors(session, request.user_id)
        nearest = vectors.nearest(
            request.qvec, request.depth, request.time_range, request.pool, request.margin
        )
        return await ranked(
            session,
            request,
            SQLITE_DIALECT,
            ({"dense": json.dumps(nearest)}, {"dense": String()}),
            term_counts=sqlite_term_counts("episodes", SQLITE_DIALECT.time_filter),
            keyword=sqlite_keyword_params(request.terms),
            corpus=(vectors.rows, vectors.typical_chars),
        )

    def drop(self, user_id: str) -> None:
        self.cache.drop(user_id)


class _FactParts:
    """SQLite's part of the fact statement: the nearest rows, scored with numpy, as JSON."""

    spelling = SQLITE_DIALECT
    one_statement = False

    def __init__(self) -> None:
        self._vectors = SqliteSearch()

    def dense(self, as_of: str) -> str:
        return SQLITE_DIALECT.dense

    def term_counts(self, table: str, row_filter: str) -> str:
        return sqlite_term_counts(table, row_filter)

    def keyword_params(self, terms: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        return sqlite_keyword_params(terms)

    async def dense_values(
        self, session: Reader, request: FactRecall, where: Sequence[ColumnElement[bool]]
    ) -> dict[str, Any]:
        nearest = await self._vectors.dense(
            session, FACTS, request.user_id, request.qvec, request.depth, where
        )
        return {"dense": json.dumps(list(nearest.items()))}


class _Search:
    """SQLite's search half: exact numpy scoring over each tenant's cached vectors."""

    facts = _FactParts()

    def vectors(self, **options: Any) -> SqliteSearch:
        # The exact-scan threshold is the HNSW plans' (Postgres); every scan here is exact.
        return SqliteSearch()

    def episodes(self, vectors: Any) -> EpisodeSearchBackend:
        return EpisodeSearch(cache=VectorCache())


SEARCH = _Search()
