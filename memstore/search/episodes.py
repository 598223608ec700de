"""Episode recall as one SQL statement: the shared fusion, then context and recency.

After the shared part (memstore/search/statement.py: ``dense``, ``kw``, their
z-scores and ``base``):

1. the turns around the best ``expand`` candidates join the pool at ``floor``;
2. ``neighbour`` = weight x the best positive ``base`` within ``width`` turns
   of the same session (a turn next to a strong hit often answers it);
3. ``session`` = weight x the mean of the session's best ``session_top``
   scores, padded with ``floor`` (a session with several hits is on topic),
   lifting a turn by at most the turn's own positive score: a session on topic
   ranks its relevant turns first, but does not carry turns that match nothing
   (filler between its hits) over another session's hit;
4. ``recency`` halves every ``half_life`` days.

The statement returns the final rows, best first, with every part of the score.

Joining rows back to ``episodes`` is the one part that must not depend on the
planner's row estimates (see ``Dialect.address_lookups``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Float, TextualSelect, column, text

from memstore.db.prepared import fetch
from memstore.db.unit import Reader
from memstore.models import EpisodeRow
from memstore.repositories.episodes import episode_from_columns
from memstore.search.statement import (
    FUSE,
    Dialect,
    EpisodeRecall,
    binds,
    carried,
    fusion_params,
    keyword_ctes,
)
from memstore.types import Episode

__all__ = ["RecallHit", "dense_only", "episode_statement", "hits", "ranked", "shared_params"]


@dataclass(frozen=True)
class RecallHit:
    episode: Episode
    score: float
    parts: dict[str, float]


_CONTEXT = """
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
lifted AS (
  SELECT r.id{rid_r}, r.occurred_at, r.dense, r.keyword, r.dz, r.kz, r.base, r.neighbour, r.s1,
    {least}(s.session_score, {positive_s1}) AS session_score
  FROM ranked AS r JOIN sess AS s ON s.session_id = r.session_id
),
scored AS (
  SELECT id{rid}, occurred_at, dense, keyword, dz, kz, base, neighbour, session_score,
    s1 + session_score AS s2
  FROM lifted
)"""

_SESSIONS_WINDOWED = """windowed AS (
  SELECT r.id{rid_r}, r.occurred_at, r.dense, r.keyword, r.dz, r.kz, r.base, r.neighbour, r.s1,
    :sw * (sum(CASE WHEN r.rk <= :stop THEN r.s1 ELSE 0 END) OVER w
           + fl.v * (:stop - sum(CASE WHEN r.rk <= :stop THEN 1 ELSE 0 END) OVER w)) / :stop
      AS whole
  FROM ranked AS r CROSS JOIN fl
  WINDOW w AS (PARTITION BY r.session_id)
),
lifted AS (
  SELECT id{rid}, occurred_at, dense, keyword, dz, kz, base, neighbour, s1,
    {least}(whole, {positive_s1}) AS session_score
  FROM windowed
),
scored AS (
  SELECT id{rid}, occurred_at, dense, keyword, dz, kz, base, neighbour, session_score,
    s1 + session_score AS s2
  FROM lifted
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
    request: EpisodeRecall,
    *,
    dense_only: bool = False,
) -> TextualSelect:
    """The whole recall as one statement, built once per shape.

    ``types``: the SQL type of each parameter the dialect's CTEs add (their
    values go to ``execute`` with :func:`shared_params`).
    """
    limits = (int(request.tuning.expand), int(request.depth))
    key = (dialect, dense_only, tuple(sorted(types)), *limits)
    cached = _statements.get(key)
    if cached is None:
        cached = _statements[key] = _build(dialect, types, limits, dense_only=dense_only)
    return cached


def _build(
    dialect: Dialect, types: Mapping[str, Any], limits: tuple[int, int], *, dense_only: bool
) -> TextualSelect:
    sd_s = dialect.stddev.format(x="s")
    rid = carried(dialect)
    if dense_only:
        body = _DENSE_ONLY.format(sd_s=sd_s, keep_episodes=_episodes_of(dialect, "dz", _ROW), **rid)
    else:
        keyword = keyword_ctes(dialect, limits[1], docs=":corpus_docs", chars=":corpus_chars")
        recency = f"exp(-0.6931471805599453 * {dialect.age_days} / :half_life)"
        sessions = _SESSIONS_WINDOWED if dialect.windowed_sessions else _SESSIONS_JOINED
        context = _CONTEXT.format(
            near=dialect.positive.format(x="coalesce(max(q.base), 0)"),
            time_filter=dialect.time_filter,
            recency=recency,
            fused_episodes=_episodes_of(dialect, "cand", "e.session_id, e.turn, e.occurred_at"),
            around_episodes=_neighbours_of(dialect),
            top_episodes=_episodes_of(dialect, "t", _ROW),
            expand=limits[0],
            sessions=sessions.format(
                least=dialect.least, positive_s1=dialect.positive.format(x="s1"), **rid
            ),
            **rid,
        )
        fuse = FUSE.format(sd_s=sd_s, float=dialect.float, **rid)
        body = f"{keyword}\n{fuse},\n{context}"
    sql = f"WITH dense(id, s{rid['rid']}) AS ({dialect.dense}),\n{body}"
    return (
        text(sql)
        .bindparams(*binds(sql, dict(types)))
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
    t = request.tuning
    return (
        (not request.terms or t.keyword_weight == 0)
        and t.neighbour_weight == 0
        and t.session_weight == 0
        and request.recency_weight == 0
    )


def shared_params(request: EpisodeRecall) -> dict[str, Any]:
    t = request.tuning
    t0, t1 = request.time_range if request.time_range is not None else (None, None)
    return {
        **fusion_params(request),
        "t0": t0,
        "t1": t1,
        "now": request.now,
        "nw": t.neighbour_weight,
        "sw": t.session_weight,
        "stop": t.session_top,
        "width": t.neighbour_width,
        "half_life": t.recency_half_life_days,
        "rw": request.recency_weight,
    }


async def ranked(
    session: Reader,
    request: EpisodeRecall,
    dialect: Dialect,
    dense: tuple[dict[str, Any], dict[str, Any]],
    *,
    term_counts: str,
    keyword: tuple[dict[str, Any], dict[str, Any]],
    corpus: tuple[int, float],
) -> list[RecallHit]:
    """Run the statement on ``dialect``, with the (values, types) of its ``dense`` CTE.

    When the query's terms can move the ranking, also ``term_counts`` with the
    (values, types) of their ``keyword`` parameters and the tenant's ``corpus``
    (rows, median text length).
    """
    values = {**shared_params(request), **dense[0]}
    types = dict(dense[1])
    only_dense = dense_only(request)
    if request.terms and not only_dense:
        dialect = replace(dialect, term_counts=term_counts)
        values.update(keyword[0], corpus_docs=float(corpus[0]), corpus_chars=corpus[1])
        types.update(keyword[1], corpus_docs=Float(), corpus_chars=Float())
    stmt = episode_statement(dialect, types, request, dense_only=only_dense)
    return hits(await fetch(session, stmt, values), recency=bool(request.recency_weight))


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
