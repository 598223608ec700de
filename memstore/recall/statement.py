"""Episode recall as one SQL statement: candidates, scores, fusion and context.

Each backend supplies two CTEs, ``dense(id, s)`` (cosine similarity of the
tenant's nearest rows) and ``kw(id, s)`` (keyword score of its best matches),
and a few dialect spellings; everything after them is shared:

1. each signal is standardised over its own candidates (z-scores), and a row
   missing from a signal gets that signal's weakest z (``floor``);
2. ``base`` = weighted sum of the two z-scores;
3. the turns around the best ``expand`` candidates join the pool at ``floor``;
4. ``neighbour`` = weight x the best positive ``base`` within ``width`` turns
   of the same session (a turn next to a strong hit often answers it);
5. ``session`` = weight x the mean of the session's best ``session_top``
   scores, padded with ``floor`` (a session with several hits is on topic);
6. ``recency`` halves every ``half_life`` days.

The statement returns the final rows, best first, with every part of the score.

Joining rows back to ``episodes`` is the one part that must not depend on the
planner's row estimates (see ``Dialect.address_lookups``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Float, TextualSelect, bindparam, column, text

from memstore.db.types import UTCDateTime
from memstore.models import EpisodeRow
from memstore.repositories.episodes import episode_from_columns
from memstore.types import Episode

__all__ = [
    "BM25",
    "Dialect",
    "EpisodeRecall",
    "Fusion",
    "RecallHit",
    "dense_only",
    "episode_statement",
    "hits",
    "shared_params",
]


@dataclass(frozen=True)
class Fusion:
    """The numbers of the shared part of the statement (see the module docstring)."""

    depth: int
    dense_weight: float
    keyword_weight: float
    neighbour_weight: float
    width: int
    session_weight: float
    session_top: int
    expand: int
    half_life_days: float
    passage_pool: int

    @property
    def pool(self) -> int:
        """Rows (best by whole-text cosine) whose passages are scored: at least ``depth``."""
        return max(self.passage_pool, self.depth)


@dataclass(frozen=True)
class EpisodeRecall:
    """One recall request: whose episodes, which terms, filters and how many rows."""

    user_id: str
    terms: tuple[str, ...]
    time_range: tuple[datetime, datetime] | None
    now: datetime
    recency_weight: float
    limit: int
    fusion: Fusion


@dataclass(frozen=True)
class Dialect:
    """How a backend spells the parts of the statement that differ."""

    dense: str  # CTE body: (id, s) of the nearest rows; (id, s, rid) with address_lookups
    # CTEs ending in tf(id, dl, i, n): occurrences n of query term i in the
    # tenant's row id of dl characters (and its rid with address_lookups); ""
    # when the query has no terms
    term_counts: str
    stddev: str  # population standard deviation of ``s``, a format string over {x}
    positive: str  # max(x, 0), a format string over {x}
    greatest: str  # the n-ary maximum function
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


@dataclass(frozen=True)
class RecallHit:
    episode: Episode
    score: float
    parts: dict[str, float]


# Okapi BM25 of the term counts; :corpus_docs and :corpus_chars (the tenant's
# rows and their mean length) come from a per-tenant cache, never counted per query.
BM25 = """
df AS (SELECT i, count(*) AS n FROM tf GROUP BY i),
corpus AS (
  SELECT {greatest}(CAST(:corpus_docs AS {float}), (SELECT count(DISTINCT id) FROM tf), 1) AS docs,
         {greatest}(CAST(:corpus_chars AS {float}), 1) AS avgdl
),
kw(id, s{rid}) AS (
  SELECT tf.id, sum(
    ln(1 + (c.docs - df.n + 0.5) / (df.n + 0.5)) * tf.n * (:k1 + 1)
    / (tf.n + :k1 * (1 - :b + :b * tf.dl / c.avgdl))) AS s{max_tf_rid}
  FROM tf JOIN df ON df.i = tf.i CROSS JOIN corpus AS c
  GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT {depth}
),"""

_SHARED = """
ds AS (SELECT avg(s) AS m, {sd_s} AS sd, min(s) AS lo FROM dense),
ks AS (SELECT avg(s) AS m, {sd_s} AS sd, min(s) AS lo FROM kw),
floors AS (
  SELECT
    CASE WHEN ds.sd > 1e-12 THEN (ds.lo - ds.m) / ds.sd ELSE 0 END AS dz0,
    CASE WHEN ks.sd > 1e-12 THEN (ks.lo - ks.m) / ks.sd ELSE 0 END AS kz0
  FROM ds CROSS JOIN ks
),
fl AS (SELECT :dw * dz0 + :kw * kz0 AS v FROM floors),
cand AS (
  SELECT c.id, coalesce(c.d, 0) AS dense, coalesce(c.k, 0) AS keyword,
    CASE WHEN c.d IS NULL THEN f.dz0
         WHEN ds.sd > 1e-12 THEN (c.d - ds.m) / ds.sd ELSE 0 END AS dz,
    CASE WHEN c.k IS NULL THEN f.kz0
         WHEN ks.sd > 1e-12 THEN (c.k - ks.m) / ks.sd ELSE 0 END AS kz{rid_c}
  FROM (
    SELECT u.id, max(u.d) AS d, max(u.k) AS k{max_u_rid} FROM (
      SELECT id, s AS d, CAST(NULL AS {float}) AS k{rid} FROM dense
      UNION ALL SELECT id, NULL, s{rid} FROM kw
    ) AS u GROUP BY u.id
  ) AS c
  CROSS JOIN ds CROSS JOIN ks CROSS JOIN floors AS f
),
fused AS (
  SELECT cand.id, cand.dense, cand.keyword, cand.dz, cand.kz,
    :dw * cand.dz + :kw * cand.kz AS base, e.session_id, e.turn, e.occurred_at{rid_cand}
  FROM cand {fused_episodes}
),
best AS (
  SELECT session_id, turn FROM fused WHERE turn IS NOT NULL
  ORDER BY base DESC, id LIMIT {expand}
),
around AS (
  SELECT DISTINCT e.id, e.session_id, e.turn, e.occurred_at{rid_e}
  FROM best AS b {around_episodes}
  WHERE e.id NOT IN (SELECT id FROM fused) {time_filter}
),
pool AS (
  SELECT id, dense, keyword, dz, kz, base, session_id, turn, occurred_at{rid} FROM fused
  UNION ALL
  SELECT a.id, 0, 0, 0, 0, fl.v, a.session_id, a.turn, a.occurred_at{rid_a}
  FROM around AS a CROSS JOIN fl
),
nb AS (
  SELECT p.id, p.dense, p.keyword, p.dz, p.kz, p.base, p.session_id, p.turn,
    p.occurred_at{rid_p}, :nw * {near} AS neighbour
  FROM pool AS p LEFT JOIN pool AS q
    ON q.session_id = p.session_id AND q.turn <> p.turn
   AND q.turn BETWEEN p.turn - :width AND p.turn + :width
  GROUP BY p.id, p.dense, p.keyword, p.dz, p.kz, p.base, p.session_id, p.turn,
    p.occurred_at{rid_p}
),
ranked AS (
  SELECT nb.*, base + neighbour AS s1,
    row_number() OVER (PARTITION BY session_id ORDER BY base + neighbour DESC, id) AS rk
  FROM nb
),
{sessions},
-- The final rows are chosen before their columns are fetched: joining every
-- pooled candidate to episodes read each row a second time.
top AS (
  SELECT e.id{rid_e}, e.occurred_at, e.dense, e.keyword, e.dz, e.kz, e.base, e.neighbour,
    e.session_score, {recency} AS recency, e.s2 + :rw * {recency} AS score
  FROM scored AS e
  ORDER BY score DESC, e.occurred_at DESC, e.id
  LIMIT :limit
)
SELECT e.user_id, e.id, e.session_id, e.input, e.output, e.tool_calls, e.metadata,
  e.occurred_at, t.dense, t.keyword, t.dz, t.kz, t.base, t.neighbour,
  t.session_score, t.recency, t.score
FROM top AS t {top_episodes}
ORDER BY t.score DESC, t.occurred_at DESC, t.id
"""


# scored(id, ..., session_score, s2): the session part, two ways of the same sum.
# SQLite runs the grouped join fast and a window slowly; Postgres the reverse
# (its misestimated join of two CTEs cost a third of a recall).
_SESSIONS_JOINED = """sess AS (
  SELECT r.session_id,
    :sw * (sum(r.s1) + fl.v * (:stop - count(*))) / :stop AS session_score
  FROM ranked AS r CROSS JOIN fl WHERE r.rk <= :stop GROUP BY r.session_id, fl.v
),
scored AS (
  SELECT r.id{rid_r}, r.occurred_at, r.dense, r.keyword, r.dz, r.kz, r.base, r.neighbour,
    s.session_score, r.s1 + s.session_score AS s2
  FROM ranked AS r JOIN sess AS s ON s.session_id = r.session_id
)"""

_SESSIONS_WINDOWED = """windowed AS (
  SELECT r.id{rid_r}, r.occurred_at, r.dense, r.keyword, r.dz, r.kz, r.base, r.neighbour, r.s1,
    :sw * (sum(CASE WHEN r.rk <= :stop THEN r.s1 ELSE 0 END) OVER w
           + fl.v * (:stop - sum(CASE WHEN r.rk <= :stop THEN 1 ELSE 0 END) OVER w)) / :stop
      AS session_score
  FROM ranked AS r CROSS JOIN fl
  WINDOW w AS (PARTITION BY r.session_id)
),
scored AS (
  SELECT id{rid}, occurred_at, dense, keyword, dz, kz, base, neighbour, session_score,
    s1 + session_score AS s2
  FROM windowed
)"""

# Dense similarity only (no keyword, neighbour, session or recency weight): the
# same scores as the full statement would give, without the parts that add nothing.
# Only the rows scoring at least the limit-th best (ties included) are fetched
# from episodes; the final ORDER BY then breaks the ties as the full statement does.
_DENSE_ONLY = """
ds AS (SELECT avg(s) AS m, {sd_s} AS sd FROM dense),
dz AS (
  SELECT d.id, d.s, CASE WHEN ds.sd > 1e-12 THEN (d.s - ds.m) / ds.sd ELSE 0 END AS z{rid_d}
  FROM dense AS d CROSS JOIN ds
),
cut AS (SELECT :dw * z AS v FROM dz ORDER BY v DESC LIMIT 1 OFFSET :limit - 1),
keep AS (
  SELECT dz.id, dz.s, dz.z{rid_dz} FROM dz
  WHERE NOT EXISTS (SELECT 1 FROM cut) OR :dw * dz.z >= (SELECT v FROM cut)
)
SELECT e.user_id, e.id, e.session_id, e.input, e.output, e.tool_calls, e.metadata,
  e.occurred_at, dz.s AS dense, 0 AS keyword, dz.z AS dz, 0 AS kz, :dw * dz.z AS base,
  0 AS neighbour, 0 AS session_score, 0 AS recency, :dw * dz.z AS score
FROM keep AS dz {keep_episodes}
ORDER BY score DESC, e.occurred_at DESC, e.id
LIMIT :limit
"""

# The columns of the rows a recall returns.
_ROW = "e.user_id, e.id, e.session_id, e.input, e.output, e.tool_calls, e.metadata, e.occurred_at"


def _carried(dialect: Dialect) -> dict[str, str]:
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


def _episodes_of(dialect: Dialect, left: str, columns: str) -> str:
    """SQL joining the rows of ``left`` (which have ``id``, and ``rid`` with
    address lookups) to their ``episodes AS e`` row, which supplies ``columns``."""
    if dialect.address_lookups:
        return (
            f"CROSS JOIN LATERAL (SELECT {columns} FROM episodes AS e\n"
            f"    WHERE e.user_id = :user_id AND e.ctid = {left}.rid OFFSET 0) AS e"
        )
    return f"JOIN episodes AS e ON e.user_id = :user_id AND e.id = {left}.id"


def _neighbours_of(dialect: Dialect) -> str:
    """SQL joining ``best AS b`` to the tenant's turns within ``:width`` of each."""
    match = (
        "e.user_id = :user_id AND e.session_id = b.session_id\n"
        "   AND e.turn BETWEEN b.turn - :width AND b.turn + :width"
    )
    if dialect.address_lookups:
        # Still an index lookup per best row: with a one-row estimate the planner
        # may prefer the (user, session, time) index, which reads the session's
        # rows rather than the turns around; bounded by the session, not the tenant.
        return (
            "CROSS JOIN LATERAL (SELECT e.id, e.session_id, e.turn, e.occurred_at,\n"
            f"    e.ctid AS rid FROM episodes AS e\n    WHERE {match} OFFSET 0) AS e"
        )
    return f"{dialect.join_in_order} episodes AS e\n    ON {match}"


_statements: dict[tuple[Dialect, bool, tuple[str, ...], int, int], TextualSelect] = {}


def episode_statement(
    dialect: Dialect,
    types: Mapping[str, Any],
    *,
    fusion: Fusion,
    dense_only: bool = False,
) -> TextualSelect:
    """The whole recall as one statement, built once per shape.

    ``types``: the SQL type of each parameter the dialect's CTEs add (their
    values go to ``execute`` with :func:`shared_params`).
    """
    limits = (int(fusion.expand), int(fusion.depth))
    key = (dialect, dense_only, tuple(sorted(types)), *limits)
    cached = _statements.get(key)
    if cached is None:
        cached = _statements[key] = _build(dialect, types, limits, dense_only=dense_only)
    return cached


def _build(
    dialect: Dialect, types: Mapping[str, Any], limits: tuple[int, int], *, dense_only: bool
) -> TextualSelect:
    sd_s = dialect.stddev.format(x="s")
    carried = _carried(dialect)
    if dense_only:
        body = _DENSE_ONLY.format(
            sd_s=sd_s, keep_episodes=_episodes_of(dialect, "dz", _ROW), **carried
        )
    else:
        keyword = (
            dialect.term_counts + BM25
            if dialect.term_counts
            else "kw(id, s{rid}) AS (SELECT id, s{rid} FROM dense WHERE 1 = 0),"
        )
        recency = f"exp(-0.6931471805599453 * {dialect.age_days} / :half_life)"
        sessions = _SESSIONS_WINDOWED if dialect.windowed_sessions else _SESSIONS_JOINED
        body = _SHARED.format(
            sd_s=sd_s,
            float=dialect.float,
            near=dialect.positive.format(x="coalesce(max(q.base), 0)"),
            time_filter=dialect.time_filter,
            recency=recency,
            fused_episodes=_episodes_of(dialect, "cand", "e.session_id, e.turn, e.occurred_at"),
            around_episodes=_neighbours_of(dialect),
            top_episodes=_episodes_of(dialect, "t", _ROW),
            expand=limits[0],
            sessions=sessions.format(**carried),
            **carried,
        )
        keyword = keyword.format(
            greatest=dialect.greatest, float=dialect.float, depth=limits[1], **carried
        )
        body = f"{keyword}\n{body}"
    sql = f"WITH dense(id, s{carried['rid']}) AS ({dialect.dense}),\n{body}"
    shared = {"t0": UTCDateTime(), "t1": UTCDateTime(), "now": UTCDateTime()}
    binds = [bindparam(k, type_=t) for k, t in {**shared, **types}.items() if f":{k}" in sql]
    return (
        text(sql)
        .bindparams(*binds)
        .columns(
            EpisodeRow.user_id,
            EpisodeRow.id,
            EpisodeRow.session_id,
            EpisodeRow.input,
            EpisodeRow.output,
            EpisodeRow.tool_calls,
            EpisodeRow.meta,
            EpisodeRow.occurred_at,
            *(
                column(name, Float)
                for name in (
                    "dense",
                    "keyword",
                    "dz",
                    "kz",
                    "base",
                    "neighbour",
                    "session_score",
                    "recency",
                    "score",
                )
            ),
        )
    )


def dense_only(request: EpisodeRecall) -> bool:
    """Whether only the dense signal can move the ranking of ``request``."""
    f = request.fusion
    return (
        (not request.terms or f.keyword_weight == 0)
        and f.neighbour_weight == 0
        and f.session_weight == 0
        and request.recency_weight == 0
    )


def shared_params(request: EpisodeRecall) -> dict[str, Any]:
    f = request.fusion
    t0, t1 = request.time_range if request.time_range is not None else (None, None)
    return {
        "user_id": request.user_id,
        "t0": t0,
        "t1": t1,
        "now": request.now,
        "dw": f.dense_weight,
        "kw": f.keyword_weight,
        "nw": f.neighbour_weight,
        "sw": f.session_weight,
        "stop": f.session_top,
        "width": f.width,
        "half_life": f.half_life_days,
        "rw": request.recency_weight,
        "limit": request.limit,
        "depth": f.depth,
        "pool": f.pool,
    }


def hits(rows: Any, *, recency: bool) -> list[RecallHit]:
    out: list[RecallHit] = []
    for r in rows:
        parts = {
            "dense": float(r.dense),
            "keyword": float(r.keyword),
            "dense_z": float(r.dz),
            "keyword_z": float(r.kz),
            "fused": float(r.base),
            "neighbour": float(r.neighbour),
            "session": float(r.session_score),
        }
        if recency:
            parts["recency"] = float(r.recency)
        out.append(RecallHit(episode_from_columns(r), float(r.score), parts))
    return out
