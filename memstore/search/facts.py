"""Fact recall as one SQL statement, on the shared fusion of memstore/search/statement.py.

Facts are always filtered by valid and transaction time (``as_of``), and a
tenant holds far fewer of them than episodes: their dense candidates are scanned
exactly (no ANN index, no vector cache), their BM25 statistics are counted over
the versions the request can see, in the statement, and the ranking is the fused
z-score (``base``) alone: facts have no sessions, turns or recency.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    String,
    TextualSelect,
    column,
    or_,
    select,
    text,
)

from memstore.db.types import PgVector
from memstore.db.unit import Reader
from memstore.models import FactRow
from memstore.models.search import document
from memstore.repositories.fact_reads import FACT_COLUMNS, fact_from_columns
from memstore.search.postgres_recall import PG_DIALECT, pg_keyword_params, pg_term_counts
from memstore.search.sqlite import (
    SQLITE_DIALECT,
    SqliteSearch,
    sqlite_keyword_params,
    sqlite_term_counts,
)
from memstore.search.statement import (
    FUSE,
    Dialect,
    FactRecall,
    binds,
    carried,
    fusion_params,
    keyword_ctes,
)
from memstore.search.tables import FACTS
from memstore.types import Fact

__all__ = ["FactHit", "FactSearch", "as_of"]

# The versions true at :valid_at as believed at :known_at.
_AS_OF = (
    "AND e.valid_from <= :valid_at AND (e.valid_to IS NULL OR e.valid_to > :valid_at) "
    "AND e.recorded_at <= :known_at AND (e.superseded_at IS NULL OR e.superseded_at > :known_at)"
)

# Postgres: exact, the distance computed once per row in a subquery that OFFSET 0
# keeps from being flattened (so the ORDER BY cannot reach an ANN index).
_PG_DENSE = f"""
SELECT x.id, 1 - x.d FROM (
  SELECT e.id, e.embedding <=> :qvec AS d FROM facts AS e
  WHERE e.user_id = :user_id AND e.embedding IS NOT NULL {_AS_OF}
  OFFSET 0
) AS x
ORDER BY x.d, x.id
LIMIT :depth"""

# SQLite: the nearest rows, scored with numpy, handed over as JSON.
_SQLITE_DENSE = SQLITE_DIALECT.dense

# BM25's corpus: the versions this request can see, and their mean text length.
_CORPUS = f"""
corpus_rows AS (
  SELECT count(*) AS docs, coalesce(avg(length({document("facts", prefix="e.")})), 0) AS chars
  FROM facts AS e WHERE e.user_id = :user_id {_AS_OF}
),"""

# Scores equal but for rounding (two candidates' z-scores are always +-1, summed
# to 0 give or take the last bits of a one-pass standard deviation) tie, and a
# tie goes to the most recently recorded version.
_RANKED = """
SELECT {columns}, c.dense, c.keyword, c.dz, c.kz, :dw * c.dz + :kw * c.kz AS score
FROM cand AS c JOIN facts AS e ON e.user_id = :user_id AND e.id = c.id
ORDER BY round(CAST(:dw * c.dz + :kw * c.kz AS NUMERIC), 9) DESC, e.recorded_at DESC, e.id
LIMIT :limit"""

_PARTS = ("dense", "keyword", "dz", "kz", "score")


@dataclass(frozen=True)
class FactHit:
    fact: Fact
    score: float  # the fused z-score: the order, relative to this query's candidates
    parts: dict[str, float]


def as_of(valid_at: datetime, known_at: datetime) -> list[ColumnElement[bool]]:
    """``_AS_OF`` as SQLAlchemy conditions on the facts table."""
    return [
        FactRow.valid_from <= valid_at,
        or_(FactRow.valid_to.is_(None), FactRow.valid_to > valid_at),
        FactRow.recorded_at <= known_at,
        or_(FactRow.superseded_at.is_(None), FactRow.superseded_at > known_at),
    ]


@cache
def _statement(postgres: bool, keywords: bool, depth: int) -> TextualSelect:
    """The fact recall statement, built once per backend, query shape and depth."""
    base = PG_DIALECT if postgres else SQLITE_DIALECT
    term_counts = ""
    if keywords:
        counts = pg_term_counts("facts", _AS_OF, rid=False) if postgres else None
        term_counts = _CORPUS + (counts or sqlite_term_counts("facts", _AS_OF))
    dialect: Dialect = replace(
        base,
        dense=_PG_DENSE if postgres else _SQLITE_DENSE,
        term_counts=term_counts,
        address_lookups=False,
    )
    keyword = keyword_ctes(
        dialect,
        depth,
        docs="(SELECT docs FROM corpus_rows)",
        chars="(SELECT chars FROM corpus_rows)",
    )
    fuse = FUSE.format(sd_s=dialect.stddev.format(x="s"), float=dialect.float, **carried(dialect))
    ranked = _RANKED.format(columns=", ".join(f"e.{c.name}" for c in FACT_COLUMNS))
    sql = f"WITH dense(id, s) AS ({dialect.dense}),\n{keyword}\n{fuse}\n{ranked}"
    types: dict[str, Any] = {"qvec": PgVector(), "dense": String()}
    types |= (pg_keyword_params if postgres else sqlite_keyword_params)(())[1]
    return (
        text(sql)
        .bindparams(*binds(sql, types))
        .columns(*FACT_COLUMNS, *(column(name, Float) for name in _PARTS))
    )


class FactSearch:
    """Fact recall on one backend: one statement (SQLite first scores the vectors)."""

    def __init__(self, *, postgres: bool) -> None:
        self.postgres = postgres
        self._vectors = SqliteSearch()

    async def recall(self, session: Reader, request: FactRecall) -> list[FactHit]:
        """The request's ``limit`` best facts, best first (ties: the most recently recorded)."""
        values: dict[str, Any] = {
            **fusion_params(request),
            "valid_at": request.valid_at,
            "known_at": request.known_at,
        }
        if self.postgres:
            values["qvec"] = request.qvec.astype(np.float32)
            keyword_params = pg_keyword_params
        else:
            where = as_of(request.valid_at, request.known_at)
            nearest = await self._vectors.dense(
                session, FACTS, request.user_id, request.qvec, request.depth, where
            )
            values["dense"] = json.dumps(list(nearest.items()))
            keyword_params = sqlite_keyword_params
        keywords = bool(request.terms) and request.tuning.keyword_weight != 0
        if keywords:
            values.update(keyword_params(request.terms)[0])
        stmt = _statement(self.postgres, keywords, request.depth)
        rows = (await session.execute(stmt, values)).all()
        width = len(FACT_COLUMNS)
        return [
            FactHit(
                fact_from_columns(tuple(r)[:width]),
                float(r.score),
                {
                    "dense": float(r.dense),
                    "keyword": float(r.keyword),
                    "dense_z": float(r.dz),
                    "keyword_z": float(r.kz),
                    "fused": float(r.score),
                },
            )
            for r in rows
        ]

    async def newest(
        self, session: Reader, user_id: str, *, valid_at: datetime, known_at: datetime, limit: int
    ) -> list[Fact]:
        """Nothing to rank by: the most recently recorded facts true as of the times."""
        stmt: Select[Any] = (
            select(*FACT_COLUMNS)
            .where(FactRow.user_id == user_id, *as_of(valid_at, known_at))
            .order_by(FactRow.recorded_at.desc(), FactRow.id)
            .limit(limit)
        )
        return [fact_from_columns(r) for r in (await session.execute(stmt)).all()]
