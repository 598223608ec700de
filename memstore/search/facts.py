"""Fact recall as one SQL statement, on the shared fusion of memstore/search/statement.py.

Facts are always filtered by valid and transaction time (``as_of``), and a
tenant holds far fewer of them than episodes: their dense candidates are scanned
exactly (no ANN index, no vector cache), their BM25 statistics are counted over
the versions the request can see, in the statement, and the ranking is the fused
z-score (``base``) alone: facts have no sessions, turns or recency.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from typing import Any

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

from memstore.db.prepared import fetch
from memstore.db.types import Vector
from memstore.db.unit import Reader
from memstore.models import FactRow
from memstore.models.search import document
from memstore.repositories.fact_reads import FACT_COLUMNS, fact_from_columns
from memstore.search.statement import (
    FUSE,
    Dialect,
    FactRecall,
    binds,
    carried,
    fusion_params,
    keyword_ctes,
)
from memstore.search.tables import FactBackend
from memstore.types import Fact

__all__ = ["FactHit", "FactSearch", "as_of"]

# The versions true at :valid_at as believed at :known_at.
_AS_OF = (
    "AND e.valid_from <= :valid_at AND (e.valid_to IS NULL OR e.valid_to > :valid_at) "
    "AND e.recorded_at <= :known_at AND (e.superseded_at IS NULL OR e.superseded_at > :known_at)"
)

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
def _statement(backend: FactBackend, keywords: bool, depth: int) -> TextualSelect:
    """The fact recall statement, built once per backend, query shape and depth."""
    term_counts = _CORPUS + backend.term_counts("facts", _AS_OF) if keywords else ""
    dialect: Dialect = replace(
        backend.spelling,
        dense=backend.dense(_AS_OF),
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
    types: dict[str, Any] = {"qvec": Vector(), "dense": String()}
    types |= backend.keyword_params(())[1]
    return (
        text(sql)
        .bindparams(*binds(sql, types))
        .columns(*FACT_COLUMNS, *(column(name, Float) for name in _PARTS))
    )


class FactSearch:
    """Fact recall on one backend: one statement (SQLite first scores the vectors)."""

    def __init__(self, backend: FactBackend) -> None:
        self._backend = backend

    @property
    def one_statement(self) -> bool:
        """Recall is the statement alone: it needs no transaction of its own."""
        return self._backend.one_statement

    async def recall(self, session: Reader, request: FactRecall) -> list[FactHit]:
        """The request's ``limit`` best facts, best first (ties: the most recently recorded)."""
        values: dict[str, Any] = {
            **fusion_params(request),
            "valid_at": request.valid_at,
            "known_at": request.known_at,
        }
        backend = self._backend
        where = as_of(request.valid_at, request.known_at)
        values.update(await backend.dense_values(session, request, where))
        keywords = bool(request.terms) and request.tuning.keyword_weight != 0
        if keywords:
            values.update(backend.keyword_params(request.terms)[0])
        stmt = _statement(backend, keywords, request.depth)
        rows = await fetch(session, stmt, values)
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
