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
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import (
    ColumnElement,
    Float,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)

from memstore.backends.postgresql.indexes import tsvector
from memstore.backends.postgresql.types import PgVector
from memstore.db.crosstenant import cross_tenant
from memstore.db.unit import Reader
from memstore.models import EpisodeRow
from memstore.search.tables import EPISODES, RecallTable
from memstore.search.tuning import RecallTuning

__all__ = [
    "DEFAULT_EXACT_THRESHOLD",
    "EPISODE_DISTANCE",
    "MAX_EF_SEARCH",
    "PostgresSearch",
    "full_text_vector",
]

DEFAULT_EXACT_THRESHOLD = 20_000
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
_OVERFETCH = 2.0
# Floor for ef_search on the ANN paths (pgvector default 40 is tuned for speed).
_MIN_EF_SEARCH = 100
_MARGIN = RecallTuning().passage_margin  # for searches without a recall request


def full_text_vector(model: RecallTable) -> ColumnElement[Any]:
    """The expression of the table's GIN index, so that the planner can use the index."""
    name = model.__tablename__
    return literal_column(tsvector(name, prefix=f"{name}."))


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


class _Scan(NamedTuple):
    """One tenant's dense search, as each plan (exact, iterative, over-fetch) runs it."""

    session: Reader
    model: RecallTable
    user_id: str
    distance: Any  # the row's cosine distance to the query vector

    @classmethod
    def of(cls, session: Reader, model: RecallTable, user_id: str, query: np.ndarray) -> _Scan:
        vector = bindparam("qvec", query.astype(np.float32), type_=PgVector())
        distance = model.embedding.op("<=>", return_type=Float)(cast(vector, PgVector()))
        return cls(session, model, user_id, distance)


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
        scan = _Scan.of(session, model, user_id, query)
        if model is not EpisodeRow or where:
            return await self._exact(scan, depth, where)
        tenant_rows = int(
            await session.scalar(
                select(func.count()).where(model.user_id == user_id, model.embedding.is_not(None))
            )
            or 0
        )
        if tenant_rows <= self.exact_threshold:
            return await self._exact(scan, depth, where)
        return await self.dense_large(session, user_id, query, depth, tenant_rows)

    async def dense_large(
        self,
        session: Reader,
        user_id: str,
        query: np.ndarray,
        depth: int,
        tenant_rows: int,
        pool: int | None = None,
        margin: float = _MARGIN,
    ) -> dict[str, float]:
        """Episodes of a tenant too big to scan on every query: through the HNSW index.

        The index returns the ``pool`` rows nearest by whole text (``depth`` when
        None); those with passages are re-scored by their best one less ``margin``.
        """
        scan = _Scan.of(session, EPISODES, user_id, query)
        fetch = max(pool or depth, depth)
        if await self._pgvector_version(session) >= (0, 8):
            found = await self._iterative(scan, fetch)
        else:
            found = await self._overfetch(scan, fetch, tenant_rows)
        rows = await session.execute(
            text(_PG_PASSAGES).bindparams(
                bindparam("qvec", type_=PgVector()), bindparam("margin", type_=Float())
            ),
            {
                "margin": margin,
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
        self, scan: _Scan, depth: int, where: Sequence[ColumnElement[bool]]
    ) -> dict[str, float]:
        session, model, user_id, distance = scan
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

    async def _iterative(self, scan: _Scan, depth: int) -> dict[str, float]:
        session, model, user_id, distance = scan
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
            return await self._exact(scan, depth, ())
        return found

    async def _overfetch(self, scan: _Scan, depth: int, tenant_rows: int) -> dict[str, float]:
        session, model, user_id, distance = scan
        table_name = model.__tablename__
        total = await session.scalar(
            text("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = :t"),
            {"t": table_name},
        )
        total_rows = max(int(total or 0), tenant_rows)
        share = tenant_rows / total_rows
        fetch = math.ceil(depth / share * _OVERFETCH)
        if fetch > MAX_EF_SEARCH:
            return await self._exact(scan, depth, ())
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
            return await self._exact(scan, depth, ())
        return found


def _nearer(whole: str, passages: str) -> str:
    """SQL: the smaller of a row's whole-text distance and its best passage's plus the margin."""
    return (
        f"CASE WHEN {passages} IS NULL THEN {whole} ELSE least({whole}, "
        f"(SELECT min(p <=> :qvec) FROM unnest({passages}) AS p) + :margin) END"
    )


# Of the ``pool`` rows nearest by whole text, a row's distance is that of its whole
# text or of its best passage plus ``RecallTuning.passage_margin``, whichever is
# smaller. Passages are stored out of line and carried as pointers: only the
# pool's are read, and only rows that have some. (No join back to episodes: with
# a new tenant's rows not yet analysed, the planner chose a nested loop that
# compared every pair.)
EPISODE_DISTANCE = _nearer("n.d", "n.passages")

# Large tenants (HNSW over whole-text vectors): the passages of the pool the index
# returned, scored exactly; rows found through the (user_id, id) key alone.
_PG_PASSAGES = f"""
SELECT e.id, 1 - {_nearer("(e.embedding <=> :qvec)", "e.passages")} AS s FROM episodes AS e
WHERE e.user_id = :user_id AND e.id = ANY(CAST(:pool_ids AS text[]))
  AND e.passages IS NOT NULL"""
