"""Postgres: pgvector for dense search, tsvector + GIN for keyword candidates.

Per-tenant dense plan (episodes). A shared HNSW index returns the globally
nearest ``ef_search`` rows and the ``user_id`` filter is applied afterwards, so
a tenant holding 1 % of the table gets ~1 % of them: too few, and not its true
top-k (measured in docs/RECALL.md). Instead:

1. tenants with at most ``exact_threshold`` searchable rows, and any search with
   extra filters (time ranges), are scanned exactly: the rows come from the
   ``(user_id, …)`` btree and are sorted by distance, never through HNSW;
2. larger tenants on pgvector >= 0.8 use HNSW with iterative scans
   (``hnsw.iterative_scan = strict_order``), which keep scanning until enough
   rows pass the tenant filter;
3. on older pgvector, HNSW is used only when over-fetching can cover the tenant:
   fetch ``depth / share * 2`` rows (share = tenant rows / all rows) with
   ``ef_search`` raised to match, which must fit pgvector's 1000 limit;
   otherwise, or when fewer than ``depth`` rows survive the filter, exact.

Facts are always filtered by valid and transaction time, so they are always
scanned exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    ARRAY,
    Boolean,
    ColumnElement,
    Float,
    Integer,
    String,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)

from memstore.core.lexical import is_prefix, tsquery
from memstore.db.crosstenant import cross_tenant
from memstore.db.types import PgVector
from memstore.db.unit import Reader
from memstore.models import EpisodeRow
from memstore.models.search import document, tsvector
from memstore.recall.search import EPISODES, RecallTable, row_text
from memstore.recall.statement import (
    Dialect,
    EpisodeRecall,
    RecallHit,
    dense_only,
    episode_statement,
    hits,
    shared_params,
)

__all__ = [
    "DEFAULT_EXACT_THRESHOLD",
    "MAX_EF_SEARCH",
    "PG_DIALECT",
    "EpisodeSearch",
    "PostgresSearch",
    "full_text_vector",
]

DEFAULT_EXACT_THRESHOLD = 20_000
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
_OVERFETCH = 2.0
# Floor for ef_search on the ANN paths (pgvector default 40 is tuned for speed).
_MIN_EF_SEARCH = 100


def full_text_vector(model: RecallTable) -> ColumnElement[Any]:
    """The expression of the table's GIN index, so that the planner can use the index."""
    name = model.__tablename__
    return literal_column(tsvector(name, prefix=f"{name}."))


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


class PostgresSearch:
    def __init__(self, *, exact_threshold: int = DEFAULT_EXACT_THRESHOLD) -> None:
        self.exact_threshold = exact_threshold
        self._pgvector: tuple[int, ...] | None = None
        # The plan of the latest dense search, for measurement and tests.
        self.last_plan = ""

    async def _pgvector_version(self, session: Reader) -> tuple[int, ...]:
        if self._pgvector is None:
            version = await session.scalar(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            )
            self._pgvector = _version_tuple(str(version or "0"))
        return self._pgvector

    async def dense(
        self,
        session: Reader,
        model: RecallTable,
        user_id: str,
        query: np.ndarray,
        depth: int,
        where: Sequence[ColumnElement[bool]],
    ) -> dict[str, float]:
        vector = bindparam("qvec", query.astype(np.float32), type_=PgVector())
        distance = model.embedding.op("<=>", return_type=Float)(cast(vector, PgVector()))
        if model is not EpisodeRow or where:
            return await self._exact(session, model, user_id, distance, depth, where)
        tenant_rows = int(
            await session.scalar(
                select(func.count()).where(model.user_id == user_id, model.embedding.is_not(None))
            )
            or 0
        )
        if tenant_rows <= self.exact_threshold:
            return await self._exact(session, model, user_id, distance, depth, where)
        return await self.dense_large(session, user_id, query, depth, tenant_rows)

    async def dense_large(
        self,
        session: Reader,
        user_id: str,
        query: np.ndarray,
        depth: int,
        tenant_rows: int,
        pool: int | None = None,
    ) -> dict[str, float]:
        """Episodes of a tenant too big to scan on every query: through the HNSW index.

        The index returns the ``pool`` rows nearest by whole text (``depth`` when
        None); those with passages are re-scored by their best one.
        """
        model = EPISODES
        vector = bindparam("qvec", query.astype(np.float32), type_=PgVector())
        distance = model.embedding.op("<=>", return_type=Float)(cast(vector, PgVector()))
        fetch = max(pool or depth, depth)
        if await self._pgvector_version(session) >= (0, 8):
            found = await self._iterative(session, model, user_id, distance, fetch)
        else:
            found = await self._overfetch(session, model, user_id, distance, fetch, tenant_rows)
        rows = await session.execute(
            text(_PG_PASSAGES).bindparams(bindparam("qvec", type_=PgVector())),
            {
                "user_id": user_id,
                "qvec": query.astype(np.float32),
                "pool_ids": list(found),
            },
        )
        for row_id, sim in rows.all():
            found[row_id] = max(found[row_id], float(sim))
        best = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
        return dict(best)

    async def _exact(
        self,
        session: Reader,
        model: RecallTable,
        user_id: str,
        distance: Any,
        depth: int,
        where: Sequence[ColumnElement[bool]],
    ) -> dict[str, float]:
        self.last_plan = "exact"
        # `+ 0` makes the sort key an expression the HNSW index cannot serve, so
        # the planner reads the tenant's rows through the user_id btree and
        # sorts them: exact by construction, whatever the statistics say.
        key = (distance + 0).label("d")
        stmt = (
            select(model.id, key)
            .where(model.user_id == user_id, model.embedding.is_not(None), *where)
            .order_by(key, model.id)
            .limit(depth)
        )
        return {r[0]: 1.0 - float(r[1]) for r in (await session.execute(stmt)).all()}

    async def _iterative(
        self,
        session: Reader,
        model: RecallTable,
        user_id: str,
        distance: Any,
        depth: int,
    ) -> dict[str, float]:
        self.last_plan = "hnsw-iterative"
        await session.execute(text("SET LOCAL hnsw.iterative_scan = strict_order"))
        ef = min(MAX_EF_SEARCH, max(_MIN_EF_SEARCH, depth))
        await session.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
        stmt = (
            select(model.id, distance.label("d"))
            .where(model.user_id == user_id, model.embedding.is_not(None))
            .order_by(distance)
            .limit(depth)
        )
        found = {r[0]: 1.0 - float(r[1]) for r in (await session.execute(stmt)).all()}
        if len(found) < depth:
            return await self._exact(session, model, user_id, distance, depth, ())
        return found

    async def _overfetch(
        self,
        session: Reader,
        model: RecallTable,
        user_id: str,
        distance: Any,
        depth: int,
        tenant_rows: int,
    ) -> dict[str, float]:
        table_name = model.__tablename__
        total = await session.scalar(
            text("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = :t"),
            {"t": table_name},
        )
        total_rows = max(int(total or 0), tenant_rows)
        share = tenant_rows / total_rows
        fetch = math.ceil(depth / share * _OVERFETCH)
        if fetch > MAX_EF_SEARCH:
            return await self._exact(session, model, user_id, distance, depth, ())
        self.last_plan = f"hnsw-overfetch({fetch})"
        await session.execute(text(f"SET LOCAL hnsw.ef_search = {max(fetch, _MIN_EF_SEARCH)}"))
        nearest = (
            select(model.id, model.user_id, distance.label("d"))
            .where(model.embedding.is_not(None))
            .order_by(distance)
            .limit(fetch)
            .subquery()
        )
        stmt = (
            select(nearest.c.id, nearest.c.d)
            .where(nearest.c.user_id == user_id)
            .order_by(nearest.c.d, nearest.c.id)
            .limit(depth)
        )
        stmt = cross_tenant(stmt, "recall-hnsw-overfetch")
        found = {r[0]: 1.0 - float(r[1]) for r in (await session.execute(stmt)).all()}
        if len(found) < min(depth, tenant_rows):
            return await self._exact(session, model, user_id, distance, depth, ())
        return found

    async def keyword(
        self,
        session: Reader,
        model: RecallTable,
        user_id: str,
        terms: Sequence[str],
        cap: int,
        where: Sequence[ColumnElement[bool]],
    ) -> list[tuple[str, str]]:
        if not terms:
            return []
        tsv = full_text_vector(model)
        query = func.to_tsquery(literal_column("'simple'"), tsquery(terms))
        stmt = (
            select(model.id, row_text(model))
            .where(model.user_id == user_id, tsv.op("@@")(query), *where)
            .order_by(func.ts_rank_cd(tsv, query).desc(), model.id)
            .limit(cap)
        )
        return [(r[0], r[1]) for r in (await session.execute(stmt)).all()]


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


def _nearer(whole: str, passages: str) -> str:
    """SQL: the smaller of a row's whole-text distance and its best passage's."""
    return (
        f"CASE WHEN {passages} IS NULL THEN {whole} ELSE least({whole}, "
        f"(SELECT min(p <=> :qvec) FROM unnest({passages}) AS p)) END"
    )


# Of the ``pool`` rows nearest by whole text, a row's distance is that of its whole
# text or of its best passage, whichever is smaller. Passages are stored out of
# line and carried as pointers: only the pool's are read, and only rows that have
# some. (No join back to episodes: with a new tenant's rows not yet analysed, the
# planner chose a nested loop that compared every pair.)
EPISODE_DISTANCE = _nearer("n.d", "n.passages")

# Large tenants (HNSW over whole-text vectors): the passages of the pool the index
# returned, scored exactly; rows found through the (user_id, id) key alone.
_PG_PASSAGES = f"""
SELECT e.id, 1 - {_nearer("(e.embedding <=> :qvec)", "e.passages")} AS s FROM episodes AS e
WHERE e.user_id = :user_id AND e.id = ANY(CAST(:pool_ids AS text[]))
  AND e.passages IS NOT NULL"""

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

# Term counts read from the stored tsvector of the tenant's matching rows. The
# `^@ ANY` pre-filter (every term is a prefix of what it matches) keeps the
# lexeme x term join small: it was a third of the statement's time.
_PG_TERM_COUNTS = """
terms AS (
  SELECT t.term, t.prefix, t.i
  FROM unnest(CAST(:terms AS text[]), CAST(:prefixes AS boolean[]))
    WITH ORDINALITY AS t(term, prefix, i)
),
kwd AS (
  SELECT e.id, e.ctid AS rid, {tsv} AS v, length({doc}) AS dl FROM episodes AS e
  WHERE e.user_id = :user_id AND {tsv} @@ to_tsquery('simple', :tsq) {time_filter}
  LIMIT :cap
),
tf AS (
  SELECT d.id, d.dl, t.i, sum(coalesce(array_length(u.positions, 1), 1)) AS n,
    max(d.rid) AS rid
  FROM kwd AS d CROSS JOIN LATERAL (
    SELECT x.lexeme, x.positions FROM unnest(d.v) AS x
    WHERE x.lexeme ^@ ANY(CAST(:terms AS text[]))
  ) AS u
  JOIN terms AS t ON CASE WHEN t.prefix THEN starts_with(u.lexeme, t.term)
                          ELSE u.lexeme = t.term END
  GROUP BY d.id, d.dl, t.i
),"""

PG_DIALECT = Dialect(
    dense=_PG_DENSE_EXACT,
    term_counts="",
    stddev="stddev_pop({x})",
    positive="greatest({x}, 0)",
    greatest="greatest",
    float="float8",
    # date_part is double precision; extract() is numeric, and numeric exp() cost
    # ~9 µs a row (a third of the statement at a 400-row tenant).
    age_days="greatest(date_part('epoch', :now - e.occurred_at) / 86400.0, 0)",
    time_filter=(
        "AND (CAST(:t0 AS timestamptz) IS NULL "
        "OR e.occurred_at BETWEEN CAST(:t0 AS timestamptz) AND CAST(:t1 AS timestamptz))"
    ),
    windowed_sessions=True,
    address_lookups=True,
)

# Keyword candidates scored per query: BM25 is exact while a tenant has fewer
# rows matching any query term than this.
KEYWORD_CAP = 5_000
# Seconds a tenant's corpus statistics (row count, mean text length) are reused.
STATS_TTL = 60.0


@dataclass(frozen=True)
class CorpusStats:
    rows: int
    mean_chars: float
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
        """The tenant's searchable rows and mean text length, refreshed every STATS_TTL s."""
        now = time.monotonic()
        cached = self._stats.get(user_id)
        if cached is not None and now - cached.taken < STATS_TTL:
            return cached
        stmt = select(func.count(), func.avg(func.length(row_text(EpisodeRow)))).where(
            EpisodeRow.user_id == user_id
        )
        count, mean = (await session.execute(stmt)).one()
        fresh = CorpusStats(int(count or 0), float(mean or 0.0), now)
        if len(self._stats) > 10_000:
            self._stats.clear()
        self._stats[user_id] = fresh
        return fresh

    def drop(self, user_id: str) -> None:
        self._stats.pop(user_id, None)

    async def recall(
        self,
        session: Reader,
        request: EpisodeRecall,
        qvec: np.ndarray,
        *,
        k1: float,
        b: float,
    ) -> list[RecallHit]:
        stats = await self.stats(session, request.user_id)
        dialect = PG_DIALECT
        values: dict[str, Any] = shared_params(request)
        types: dict[str, Any] = {}
        if stats.rows > self.vectors.exact_threshold and request.time_range is None:
            dense = await self.vectors.dense_large(
                session,
                request.user_id,
                qvec,
                request.fusion.depth,
                stats.rows,
                pool=request.fusion.pool,
            )
            dialect = replace(dialect, dense=_PG_DENSE_GIVEN)
            values.update(dense_ids=list(dense), dense_sims=list(dense.values()))
            types.update(dense_ids=ARRAY(String()), dense_sims=ARRAY(Float()))
        else:
            self.vectors.last_plan = "exact"
            dialect = replace(
                dialect,
                dense=_PG_DENSE_EXACT.format(
                    distance=EPISODE_DISTANCE, time_filter=dialect.time_filter
                ),
            )
            values["qvec"] = qvec.astype(np.float32)
            types["qvec"] = PgVector()
        only_dense = dense_only(request)
        if request.terms and not only_dense:
            dialect = replace(
                dialect,
                term_counts=_PG_TERM_COUNTS.format(
                    tsv=tsvector("episodes", prefix="e."),
                    doc=document("episodes", prefix="e."),
                    time_filter=dialect.time_filter,
                ),
            )
            values.update(
                terms=list(request.terms),
                prefixes=[is_prefix(t) for t in request.terms],
                tsq=tsquery(request.terms),
                cap=KEYWORD_CAP,
                corpus_docs=float(stats.rows),
                corpus_chars=stats.mean_chars,
                k1=k1,
                b=b,
            )
            types.update(
                terms=ARRAY(String()),
                prefixes=ARRAY(Boolean()),
                tsq=String(),
                cap=Integer(),
                corpus_docs=Float(),
                corpus_chars=Float(),
                k1=Float(),
                b=Float(),
            )
        stmt = episode_statement(dialect, types, fusion=request.fusion, dense_only=only_dense)
        rows = await session.execute(stmt, values)
        return hits(rows, recency=bool(request.recency_weight))
