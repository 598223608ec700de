"""Recall as one SQL statement: candidates, scores and fusion, for episodes and facts.

Each backend supplies two CTEs, ``dense(id, s)`` (cosine similarity of the
tenant's nearest rows) and ``tf(id, dl, al, i, n)`` (term counts of its rows
matching the query, with each row's length and its agent's answer's length), and
a few dialect spellings; everything after them is shared by both backends and
both tables:

1. ``kw(id, s)``: Okapi BM25 of the term counts (``BM25``), the length weight
   per row: ``BM25_B`` for what was recorded, 1 for the agent's answer's share;
2. each signal is standardised over its own candidates (z-scores), and a row
   missing from a signal gets that signal's weakest z (``floor``);
3. each signal's z-scores are weighted by its share of how far the two lists'
   best stand out (the square root of each list's top z, the two shares summing
   to 2; 1 each when a list is empty or flat): a list whose best row is far
   above the rest says more about this query than one whose best barely is;
4. ``base`` = weighted sum of the two (``FUSE``).

Facts are ranked by ``base`` (memstore/search/facts.py); episodes add context
terms in memstore/search/episodes.py. The weights are :class:`RecallTuning`'s,
read as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import BindParameter, Float, bindparam

from memstore.core.lexical import BM25_B, BM25_K1
from memstore.db.types import UTCDateTime
from memstore.search.tuning import RecallTuning

__all__ = [
    "BM25",
    "FUSE",
    "Dialect",
    "EpisodeRecall",
    "FactRecall",
    "Recall",
    "binds",
    "carried",
    "fusion_params",
    "keyword_ctes",
]


@dataclass(frozen=True)
class Recall:
    """What every recall request says: whose rows, which terms, how many, which weights."""

    user_id: str
    terms: tuple[str, ...]  # the query's, from memstore.core.lexical.query_terms
    qvec: np.ndarray  # the query's unit vector
    limit: int
    tuning: RecallTuning

    @property
    def depth(self) -> int:
        """Candidates taken from each signal: the tuning's, at least ``limit``."""
        return max(self.tuning.depth, self.limit)

    @property
    def pool(self) -> int:
        """Rows (best by whole-text cosine) whose passages are scored: at least ``depth``."""
        return max(self.tuning.passage_pool, self.depth)

    @property
    def margin(self) -> float:
        """What a passage's cosine must beat its episode's whole-text cosine by to count."""
        return self.tuning.passage_margin


@dataclass(frozen=True)
class EpisodeRecall(Recall):
    """An episode recall: also a time range, the clock and the recency weight."""

    time_range: tuple[datetime, datetime] | None
    now: datetime
    recency_weight: float


@dataclass(frozen=True)
class FactRecall(Recall):
    """A fact recall: the versions true at ``valid_at`` as believed at ``known_at``."""

    valid_at: datetime
    known_at: datetime


@dataclass(frozen=True)
class Dialect:
    """How a backend spells the parts of the statement that differ."""

    dense: str  # CTE body: (id, s) of the nearest rows; (id, s, rid) with address_lookups
    # CTEs ending in tf(id, dl, al, i, n): occurrences n of query term i in the
    # tenant's row id of dl characters, al of them its agent's answer (and its
    # rid with address_lookups); "" when the query has no terms
    term_counts: str
    stddev: str  # population standard deviation of ``s``, a format string over {x}
    positive: str  # max(x, 0), a format string over {x}
    greatest: str  # the n-ary maximum function
    least: str  # the n-ary minimum function
    float: str  # the name of the double precision type
    age_days: str  # days from e.occurred_at to :now, >= 0
    time_filter: str  # AND ... keeping e.occurred_at within :t0 .. :t1 when :t0 is set
    join_in_order: str = "JOIN"  # a join whose left side stays the outer loop
    windowed_sessions: bool = False  # session scores by a window, not a grouped join
    # Postgres: each candidate carries ``rid``, the ctid its scan read, and is
    # joined back to episodes by it, one outer row at a time (LATERAL, which
    # OFFSET 0 keeps from being flattened). Joins by id were planned from the
    # tenant's row estimate, one row for a tenant written since the table was last
    # analysed: the planner scanned the tenant as the outer loop and compared each
    # row with every candidate (1.8 million comparisons at 5,000 rows). A LATERAL
    # lookup by (user_id, id) is not enough: at one row every index on user_id
    # costs the same, and one that is not the key reads the whole tenant per
    # candidate. A TID scan costs less than any index path whatever the estimate,
    # and the ctid, read in this statement's snapshot, names the version it sees.
    address_lookups: bool = False


# Okapi BM25 of the term counts. {docs} and {chars}, the tenant's rows and their
# typical length: episodes bind their count and median length from a per-tenant
# cache (never counted per query; memstore/search/tables.py's corpus_size), facts
# count their few rows and mean length as of the request's times in the statement.
# The length weight is the row's own: ``:b`` (BM25_B) for what was recorded, where a
# longer turn says more, and 1 for the share of the row that is the agent's answer
# (``tf.al``), whose length is the answer's verbosity, not more said: a long answer
# touching several query words once must not outrank the short message holding them.
BM25 = """
df AS (SELECT i, count(*) AS n FROM tf GROUP BY i),
corpus AS (
  SELECT {greatest}(CAST({docs} AS {float}), (SELECT count(DISTINCT id) FROM tf), 1) AS docs,
         {greatest}(CAST({chars} AS {float}), 1) AS avgdl
),
kw(id, s{rid}) AS (
  SELECT tf.id, sum(
    ln(1 + (c.docs - df.n + 0.5) / (df.n + 0.5)) * tf.n * (:k1 + 1)
    / (tf.n + :k1 * (1 + (:b + (1 - :b) * tf.al / {greatest}(CAST(tf.dl AS {float}), 1))
                       * (tf.dl / c.avgdl - 1)))) AS s{max_tf_rid}
  FROM tf JOIN df ON df.i = tf.i CROSS JOIN corpus AS c
  GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT {depth}
),"""

FUSE = """
ds AS (SELECT avg(s) AS m, {sd_s} AS sd, min(s) AS lo, max(s) AS hi FROM dense),
ks AS (SELECT avg(s) AS m, {sd_s} AS sd, min(s) AS lo, max(s) AS hi FROM kw),
apart AS (
  SELECT
    sqrt(CASE WHEN ds.sd > 1e-12 THEN (ds.hi - ds.m) / ds.sd ELSE 0 END) AS d,
    sqrt(CASE WHEN ks.sd > 1e-12 THEN (ks.hi - ks.m) / ks.sd ELSE 0 END) AS k
  FROM ds CROSS JOIN ks
),
shares AS (
  SELECT CASE WHEN d > 0 AND k > 0 THEN 2 * d / (d + k) ELSE 1 END AS wd,
         CASE WHEN d > 0 AND k > 0 THEN 2 * k / (d + k) ELSE 1 END AS wk
  FROM apart
),
floors AS (
  SELECT
    CASE WHEN ds.sd > 1e-12 THEN w.wd * (ds.lo - ds.m) / ds.sd ELSE 0 END AS dz0,
    CASE WHEN ks.sd > 1e-12 THEN w.wk * (ks.lo - ks.m) / ks.sd ELSE 0 END AS kz0
  FROM ds CROSS JOIN ks CROSS JOIN shares AS w
),
fl AS (SELECT :dw * dz0 + :kw * kz0 AS v FROM floors),
cand AS (
  SELECT c.id, coalesce(c.d, 0) AS dense, coalesce(c.k, 0) AS keyword,
    CASE WHEN c.d IS NULL THEN f.dz0
         WHEN ds.sd > 1e-12 THEN w.wd * (c.d - ds.m) / ds.sd ELSE 0 END AS dz,
    CASE WHEN c.k IS NULL THEN f.kz0
         WHEN ks.sd > 1e-12 THEN w.wk * (c.k - ks.m) / ks.sd ELSE 0 END AS kz{rid_c}
  FROM (
    SELECT u.id, max(u.d) AS d, max(u.k) AS k{max_u_rid} FROM (
      SELECT id, s AS d, CAST(NULL AS {float}) AS k{rid} FROM dense
      UNION ALL SELECT id, NULL, s{rid} FROM kw
    ) AS u GROUP BY u.id
  ) AS c
  CROSS JOIN ds CROSS JOIN ks CROSS JOIN floors AS f CROSS JOIN shares AS w
)"""

# An empty kw(id, s) for a query without terms.
_NO_KEYWORDS = "kw(id, s{rid}) AS (SELECT id, s{rid} FROM dense WHERE 1 = 0),"


def carried(dialect: Dialect) -> dict[str, str]:
    """Format fields that carry ``rid`` through the statement, or nothing.

    ``{rid}`` and ``{rid_<alias>}`` add the column to a select list,
    ``{max_<alias>_rid}`` takes it through a GROUP BY on ``id`` (one row, one
    rid) without changing the grouping.
    """
    aliases = ("a", "c", "cand", "d", "dz", "e", "p", "r")
    if not dialect.address_lookups:
        return dict.fromkeys(("rid", "max_u_rid", "max_tf_rid", *(f"rid_{a}" for a in aliases)), "")
    return {
        "rid": ", rid",
        "max_u_rid": ", max(u.rid) AS rid",
        "max_tf_rid": ", max(tf.rid)",
        **{f"rid_{a}": f", {a}.rid" for a in aliases},
    }


def keyword_ctes(dialect: Dialect, depth: int, *, docs: str, chars: str) -> str:
    """The CTEs ending in ``kw(id, s)``: BM25 over the dialect's term counts, or none."""
    body = dialect.term_counts + BM25 if dialect.term_counts else _NO_KEYWORDS
    return body.format(
        greatest=dialect.greatest,
        float=dialect.float,
        depth=depth,
        docs=docs,
        chars=chars,
        **carried(dialect),
    )


def binds(sql: str, types: dict[str, Any]) -> list[BindParameter[Any]]:
    """Typed parameters for those of ``types`` (and the shared times) that ``sql`` uses."""
    shared: dict[str, Any] = {k: UTCDateTime() for k in ("t0", "t1", "now", "valid_at", "known_at")}
    shared |= {"k1": Float(), "b": Float(), "margin": Float()}
    return [bindparam(k, type_=t) for k, t in {**shared, **types}.items() if f":{k}" in sql]


def fusion_params(request: Recall) -> dict[str, Any]:
    """The values every statement binds: tenant, weights, sizes and BM25's constants."""
    t = request.tuning
    return {
        "user_id": request.user_id,
        "dw": t.dense_weight,
        "kw": t.keyword_weight,
        "limit": request.limit,
        "depth": request.depth,
        "pool": request.pool,
        "margin": request.margin,
        "k1": BM25_K1,
        "b": BM25_B,
    }
