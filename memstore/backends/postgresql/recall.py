"""Postgres recall statements: the dialect, term counts, the episode and fact searches.

Dense candidates of a tenant small enough to scan come from an exact scan
inside the statement; larger tenants' from the HNSW plans of :mod:`.search`
plans, handed to the statement as (id, similarity) arrays.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import ARRAY, Boolean, ColumnElement, Float, Integer, String

from memstore.backends.postgresql.indexes import tsquery, tsvector
from memstore.backends.postgresql.search import EPISODE_DISTANCE, PostgresSearch
from memstore.backends.postgresql.types import PgVector
from memstore.core.lexical import is_prefix
from memstore.db.unit import Reader
from memstore.models.search import answer_length, document
from memstore.search.episodes import RecallHit, ranked
from memstore.search.statement import Dialect, EpisodeRecall, FactRecall
from memstore.search.tables import EpisodeSearchBackend, corpus_size

__all__ = [
    "KEYWORD_CAP",
    "PG_DIALECT",
    "SEARCH",
    "EpisodeSearch",
    "pg_keyword_params",
    "pg_term_counts",
]

# Exact: the distance is computed once per row inside a subquery that OFFSET 0
# keeps from being flattened, so the ORDER BY cannot reach the HNSW index (the
# tenant's rows come from the user_id btree) and `<=>` is not evaluated twice.
# ``rid`` is the row's address, by which the statement fetches it again.
_PG_DENSE_EXACT = """
SELECT n.id, 1 - {distance} AS s, n.rid FROM (
  SELECT x.id, x.d, x.passages, x.rid FROM (
    SELECT e.id, e.embedding <=> :qvec AS d, e.passages, e.ctid AS rid FROM episodes AS e
    WHERE e.user_id = :user_id AND e.embedding IS NOT NULL {time_filter}
    OFFSET 0
  ) AS x
  ORDER BY x.d, x.id
  LIMIT :pool
) AS n
ORDER BY s DESC, n.id
LIMIT :depth"""


# Large tenants: the rows the HNSW statements found, with their similarity and
# the address this statement reads them at; in the order found, since the mean
# and standard deviation over them are summed in it. One scan by id, not a join
# of the ids to episodes, whose plan would hang on the tenant's row estimate. (A
# row deleted since the HNSW statement now leaves the statistics too.)
_PG_DENSE_GIVEN = """
SELECT e.id, (CAST(:dense_sims AS float8[]))[array_position(CAST(:dense_ids AS text[]), e.id)],
  e.ctid
FROM episodes AS e
WHERE e.user_id = :user_id AND e.id = ANY(CAST(:dense_ids AS text[]))
ORDER BY array_position(CAST(:dense_ids AS text[]), e.id)"""


# Term counts read from the tsvector of the tenant's matching rows (episodes
# store theirs; facts, few per tenant, compute it). The `^@ ANY` pre-filter
# (every term is a prefix of what it matches) keeps the lexeme x term join
# small: it was a third of the statement's time.
_PG_TERM_COUNTS = """
terms AS (
  SELECT t.term, t.prefix, t.i
  FROM unnest(CAST(:terms AS text[]), CAST(:prefixes AS boolean[]))
    WITH ORDINALITY AS t(term, prefix, i)
),
kwd AS (
  SELECT e.id{rid_kwd}, {tsv} AS v, length({doc}) AS dl, {answer} AS al FROM {table} AS e
  WHERE e.user_id = :user_id AND {tsv} @@ to_tsquery('simple', :tsq) {filter}
  LIMIT :cap
),
tf AS (
  SELECT d.id, d.dl, d.al, t.i, sum(coalesce(array_length(u.positions, 1), 1)) AS n{rid_tf}
  FROM kwd AS d CROSS JOIN LATERAL (
    SELECT x.lexeme, x.positions FROM unnest(d.v) AS x
    WHERE x.lexeme ^@ ANY(CAST(:terms AS text[]))
  ) AS u
  JOIN terms AS t ON CASE WHEN t.prefix THEN starts_with(u.lexeme, t.term)
                          ELSE u.lexeme = t.term END
  GROUP BY d.id, d.dl, d.al, t.i
),"""


def pg_term_counts(table: str, row_filter: str, *, rid: bool) -> str:
    """The CTEs ending in ``tf`` over ``table AS e`` rows kept by ``row_filter`` (AND ...)."""
    return _PG_TERM_COUNTS.format(
        table=table,
        tsv=tsvector(table, prefix="e."),
        doc=document(table, prefix="e."),
        answer=answer_length(table, prefix="e."),
        filter=row_filter,
        rid_kwd=", e.ctid AS rid" if rid else "",
        rid_tf=",\n    max(d.rid) AS rid" if rid else "",
    )


def pg_keyword_params(terms: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Values and types of :func:`pg_term_counts`' parameters."""
    values = {
        "terms": list(terms),
        "prefixes": [is_prefix(t) for t in terms],
        "tsq": tsquery(terms),
        "cap": KEYWORD_CAP,
    }
    types = {
        "terms": ARRAY(String()),
        "prefixes": ARRAY(Boolean()),
        "tsq": String(),
        "cap": Integer(),
    }
    return values, types


PG_TIME_FILTER = (
    "AND (CAST(:t0 AS timestamptz) IS NULL "
    "OR e.occurred_at BETWEEN CAST(:t0 AS timestamptz) AND CAST(:t1 AS timestamptz))"
)

PG_DIALECT = Dialect(
    dense=_PG_DENSE_EXACT,
    term_counts="",
    stddev="stddev_pop({x})",
    positive="greatest({x}, 0)",
    greatest="greatest",
    least="least",
    float="float8",
    # date_part is double precision; extract() is numeric, and numeric exp() cost
    # ~9 µs a row (a third of the statement at a 400-row tenant).
    age_days="greatest(date_part('epoch', :now - e.occurred_at) / 86400.0, 0)",
    time_filter=PG_TIME_FILTER,
    windowed_sessions=True,
    address_lookups=True,
)

# Keyword candidates scored per query: BM25 is exact while a tenant has fewer
# rows matching any query term than this.
KEYWORD_CAP = 5_000
# Seconds a tenant's corpus statistics (row count, median text length) are reused.
STATS_TTL = 60.0


@dataclass(frozen=True)
class CorpusStats:
    rows: int
    typical_chars: float
    taken: float


class EpisodeSearch:
    """Postgres episode recall in one statement (two when a big tenant goes through HNSW)."""

    def __init__(self, *, vectors: PostgresSearch) -> None:
        self.vectors = vectors
        self._stats: dict[str, CorpusStats] = {}

    def one_statement(self, user_id: str, time_range: tuple[datetime, datetime] | None) -> bool:
        """True when the cached statistics say the tenant is scanned exactly.

        Only the HNSW plans need a transaction (their ``SET LOCAL``); an exact
        recall is one statement. Unknown or stale statistics say False, and the
        transaction that recall then opens refreshes them.
        """
        cached = self._stats.get(user_id)
        if cached is None or time.monotonic() - cached.taken >= STATS_TTL:
            return False
        return time_range is not None or cached.rows <= self.vectors.exact_threshold

    async def stats(self, session: Reader, user_id: str) -> CorpusStats:
        """The tenant's searchable rows and median text length, refreshed every STATS_TTL s."""
        now = time.monotonic()
        cached = self._stats.get(user_id)
        if cached is not None and now - cached.taken < STATS_TTL:
            return cached
        count, middle = await corpus_size(session, user_id)
        fresh = CorpusStats(count, middle, now)
        if len(self._stats) > 10_000:
            self._stats.clear()
        self._stats[user_id] = fresh
        return fresh

    def drop(self, user_id: str) -> None:
        self._stats.pop(user_id, None)

    async def recall(self, session: Reader, request: EpisodeRecall) -> list[RecallHit]:
        stats = await self.stats(session, request.user_id)
        dialect = PG_DIALECT
        if stats.rows > self.vectors.exact_threshold and request.time_range is None:
            nearest = await self.vectors.dense_large(
                session,
                request.user_id,
                request.qvec,
                request.depth,
                stats.rows,
                pool=request.pool,
                margin=request.margin,
            )
            dialect = replace(dialect, dense=_PG_DENSE_GIVEN)
            dense = (
                {"dense_ids": list(nearest), "dense_sims": list(nearest.values())},
                {"dense_ids": ARRAY(String()), "dense_sims": ARRAY(Float())},
            )
        else:
            self.vectors.last_plan = "exact"
            exact = _PG_DENSE_EXACT.format(distance=EPISODE_DISTANCE, time_filter=PG_TIME_FILTER)
            dialect = replace(dialect, dense=exact)
            dense = ({"qvec": request.qvec.astype(np.float32)}, {"qvec": PgVector()})
        return await ranked(
            session,
            request,
            dialect,
            dense,
            term_counts=pg_term_counts("episodes", PG_TIME_FILTER, rid=True),
            keyword=pg_keyword_params(request.terms),
            corpus=(stats.rows, stats.typical_chars),
        )


# Facts: exact, the distance computed once per row in a subquery that OFFSET 0
# keeps from being flattened (so the ORDER BY cannot reach an ANN index).
_PG_FACTS_DENSE = """
SELECT x.id, 1 - x.d FROM (
  SELECT e.id, e.embedding <=> :qvec AS d FROM facts AS e
  WHERE e.user_id = :user_id AND e.embedding IS NOT NULL {as_of}
  OFFSET 0
) AS x
ORDER BY x.d, x.id
LIMIT :depth"""


class _FactParts:
    """Postgres' part of the fact statement: the vectors are compared in it."""

    spelling = PG_DIALECT
    one_statement = True

    def dense(self, as_of: str) -> str:
        return _PG_FACTS_DENSE.format(as_of=as_of)

    def term_counts(self, table: str, row_filter: str) -> str:
        return pg_term_counts(table, row_filter, rid=False)

    def keyword_params(self, terms: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        return pg_keyword_params(terms)

    async def dense_values(
        self, session: Reader, request: FactRecall, where: Sequence[ColumnElement[bool]]
    ) -> dict[str, Any]:
        return {"qvec": request.qvec.astype(np.float32)}


class _Search:
    """Postgres' search half: HNSW plans shared by episode recall, facts in SQL."""

    facts = _FactParts()

    def vectors(self, **options: Any) -> PostgresSearch:
        return PostgresSearch(**options)

    def episodes(self, vectors: Any) -> EpisodeSearchBackend:
        if not isinstance(vectors, PostgresSearch):
            raise TypeError(f"Postgres episode recall needs PostgresSearch, not {vectors!r}")
        return EpisodeSearch(vectors=vectors)


SEARCH = _Search()
