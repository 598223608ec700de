"""Hand-written hybrid fact recall on the raw drivers: the baseline of ``recall_facts``.

The retrieval memstore's ``recall_facts`` runs, written out by hand: the
tenant's fact versions true at ``valid_at`` as believed at ``known_at``; their
``DEPTH`` nearest by cosine and their ``DEPTH`` best by Okapi BM25 over the
query terms' occurrences (a term of three or more letters matches the words it
begins); each list standardised over its own candidates and weighted by how far
its best stands out, a row missing from a list taking that list's weakest
z-score; ranked by the sum, ties to the most recently recorded version.

Postgres: one statement on asyncpg (cosine in SQL, term occurrences from the
facts' tsvector). SQLite: the tenant's vectors scored with numpy, then one
statement on aiosqlite (term occurrences from the FTS5 instance table). The
query terms and the constants are memstore's, so both sides rank the same words
the same way; ``scen_temporal`` checks they return the same ids in the same order.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from memstore.core.lexical import BM25_B, BM25_K1, is_prefix, query_terms
from memstore.search.tuning import RecallTuning

__all__ = ["COLUMNS", "DEPTH", "PG_FACT_HYBRID", "SQLITE_FACT_HYBRID", "PgFacts", "SqliteFacts"]

DEPTH = RecallTuning().depth  # candidates per signal
KEYWORD_CAP = 5_000  # rows whose term occurrences are counted (Postgres)
_DOC = "{e}subject || ' ' || replace({e}predicate, '_', ' ') || ' ' || {e}object"
COLUMNS = (
    "id, fact_id, user_id, subject, predicate, object, single_valued, confidence, sources, "
    "valid_from, valid_to, recorded_at, superseded_at"
)
_AS_OF = (
    "e.valid_from <= {v} AND (e.valid_to IS NULL OR e.valid_to > {v}) "
    "AND e.recorded_at <= {k} AND (e.superseded_at IS NULL OR e.superseded_at > {k})"
)

# Shared by both statements after the dense(id, s) and tf(id, dl, i, n) CTEs:
# BM25, the two lists' statistics, the weights and the fused order.
_FUSED = """
df AS (SELECT i, count(*) AS n FROM tf GROUP BY i),
corpus AS (
  SELECT {greatest}(CAST(seen.docs AS {f}), (SELECT count(DISTINCT id) FROM tf), 1) AS docs,
         {greatest}(CAST(seen.chars AS {f}), 1) AS avgdl FROM seen
),
kw AS (
  SELECT tf.id, sum(ln(1 + (c.docs - df.n + 0.5) / (df.n + 0.5)) * tf.n * ({k1} + 1)
                    / (tf.n + {k1} * (1 + {b} * (tf.dl / c.avgdl - 1)))) AS s
  FROM tf JOIN df ON df.i = tf.i CROSS JOIN corpus AS c
  GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT {depth}
),
st AS (
  SELECT ds.m AS dm, ds.sd AS dsd, ds.lo AS dlo, ks.m AS km, ks.sd AS ksd, ks.lo AS klo,
         sqrt(CASE WHEN ds.sd > 1e-12 THEN (ds.hi - ds.m) / ds.sd ELSE 0 END) AS da,
         sqrt(CASE WHEN ks.sd > 1e-12 THEN (ks.hi - ks.m) / ks.sd ELSE 0 END) AS ka
  FROM (SELECT avg(s) AS m, {sd} AS sd, min(s) AS lo, max(s) AS hi FROM dense) AS ds
  CROSS JOIN (SELECT avg(s) AS m, {sd} AS sd, min(s) AS lo, max(s) AS hi FROM kw) AS ks
),
w AS (
  SELECT st.*, CASE WHEN da > 0 AND ka > 0 THEN 2 * da / (da + ka) ELSE 1 END AS wd,
               CASE WHEN da > 0 AND ka > 0 THEN 2 * ka / (da + ka) ELSE 1 END AS wk
  FROM st
),
scored AS (
  SELECT u.id,
    CASE WHEN w.dsd > 1e-12 THEN w.wd * (coalesce(u.d, w.dlo) - w.dm) / w.dsd ELSE 0 END
    + CASE WHEN w.ksd > 1e-12 THEN w.wk * (coalesce(u.k, w.klo) - w.km) / w.ksd ELSE 0 END
      AS score
  FROM (
    SELECT id, max(d) AS d, max(k) AS k FROM (
      SELECT id, s AS d, CAST(NULL AS {f}) AS k FROM dense
      UNION ALL SELECT id, NULL, s FROM kw) AS a
    GROUP BY id
  ) AS u CROSS JOIN w
)
SELECT {columns} FROM scored AS c JOIN facts AS e ON e.user_id = {u} AND e.id = c.id
ORDER BY round(CAST(c.score AS NUMERIC), 9) DESC, e.recorded_at DESC, e.id
LIMIT {limit}"""


def _fused(*, pg: bool, u: str, limit: str) -> str:
    return _FUSED.format(
        greatest="greatest" if pg else "max",
        f="float8" if pg else "REAL",
        sd="stddev_pop(s)" if pg else "sqrt(max(avg(s * s) - avg(s) * avg(s), 0))",
        k1=f"CAST({BM25_K1!r} AS float8)" if pg else repr(BM25_K1),
        b=f"CAST({BM25_B!r} AS float8)" if pg else repr(BM25_B),
        depth=DEPTH,
        columns=", ".join(f"e.{c}" for c in COLUMNS.split(", ")),
        u=u,
        limit=limit,
    )


_PG_AS_OF = _AS_OF.format(v="$2", k="$3")
_PG_TSV = f"to_tsvector('simple', {_DOC.format(e='e.')})"
# $1 tenant, $2 valid_at, $3 known_at, $4 query vector, $5 terms, $6 which are
# prefixes, $7 the tsquery of the terms, $8 limit.
PG_FACT_HYBRID = f"""
WITH dense AS (
  SELECT id, 1 - d AS s FROM (
    SELECT e.id, e.embedding <=> $4 AS d FROM facts AS e
    WHERE e.user_id = $1 AND e.embedding IS NOT NULL AND {_PG_AS_OF}
    OFFSET 0) AS x
  ORDER BY d, id LIMIT {DEPTH}
),
seen AS (
  SELECT count(*) AS docs, coalesce(avg(length({_DOC.format(e="e.")})), 0) AS chars
  FROM facts AS e WHERE e.user_id = $1 AND {_PG_AS_OF}
),
matched AS (
  SELECT e.id, {_PG_TSV} AS v, length({_DOC.format(e="e.")}) AS dl FROM facts AS e
  WHERE e.user_id = $1 AND {_PG_TSV} @@ to_tsquery('simple', $7) AND {_PG_AS_OF}
  LIMIT {KEYWORD_CAP}
),
tf AS (
  SELECT m.id, m.dl, t.i, sum(coalesce(array_length(x.positions, 1), 1)) AS n
  FROM matched AS m CROSS JOIN LATERAL unnest(m.v) AS x
  JOIN unnest($5::text[], $6::boolean[]) WITH ORDINALITY AS t(term, prefix, i)
    ON CASE WHEN t.prefix THEN starts_with(x.lexeme, t.term) ELSE x.lexeme = t.term END
  GROUP BY m.id, m.dl, t.i
),{_fused(pg=True, u="$1", limit="$8")}
"""

_SQ_AS_OF = _AS_OF.format(v=":v", k=":k")
# :u tenant, :v valid_at, :k known_at, :dense [[id, cosine], ...] best first,
# :terms [[lo, hi), ...] the index terms each query term matches, :limit.
SQLITE_FACT_HYBRID = f"""
WITH dense(id, s) AS (
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:dense)
),
seen AS (
  SELECT count(*) AS docs, coalesce(avg(length({_DOC.format(e="e.")})), 0) AS chars
  FROM facts AS e WHERE e.user_id = :u AND {_SQ_AS_OF}
),
terms AS (
  SELECT CAST(key AS INTEGER) + 1 AS i, json_extract(value, '$[0]') AS lo,
         json_extract(value, '$[1]') AS hi
  FROM json_each(:terms)
),
hits AS (
  SELECT k.id, t.i, count(*) AS n
  FROM terms AS t
  CROSS JOIN facts_fts_instances AS v ON v.term >= t.lo AND v.term < t.hi
  JOIN facts_fts_keys AS k ON k.rowid = v.doc
  WHERE k.user_id = :u
  GROUP BY k.id, t.i
),
tf AS (
  SELECT h.id, length({_DOC.format(e="e.")}) AS dl, h.i, h.n
  FROM hits AS h JOIN facts AS e ON e.user_id = :u AND e.id = h.id
  WHERE {_SQ_AS_OF}
),{_fused(pg=False, u=":u", limit=":limit")}
"""

_SQLITE_VECTORS = (
    "SELECT e.id, e.embedding FROM facts AS e "
    f"WHERE e.user_id = :u AND e.embedding IS NOT NULL AND {_SQ_AS_OF}"
)


class PgFacts:
    """The Postgres statement on one asyncpg connection (prepared and cached by asyncpg)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def recall(
        self, user: str, text: str, vec: np.ndarray, valid_at: Any, known_at: Any, k: int
    ) -> list[str]:
        terms = query_terms(text)
        tsq = " | ".join(f"{t}:*" if is_prefix(t) else t for t in terms)
        rows = await self.conn.fetch(
            PG_FACT_HYBRID,
            user,
            valid_at,
            known_at,
            vec.astype(np.float32),
            terms,
            [is_prefix(t) for t in terms],
            tsq,
            k,
        )
        return [r["id"] for r in rows]


def _term_range(term: str) -> tuple[str, str]:
    """The FTS5 index terms ``term`` matches, as [lo, hi): the words it begins, or itself."""
    if is_prefix(term):
        return term, term[:-1] + chr(ord(term[-1]) + 1)
    return term, term + "\x01"


class SqliteFacts:
    """The tenant's vectors scored with numpy, then the statement, on aiosqlite."""

    def __init__(self, db: Any) -> None:
        self.db = db  # raw.SqliteQueries

    async def recall(
        self, user: str, text: str, vec: np.ndarray, valid_at: Any, known_at: Any, k: int
    ) -> list[str]:
        times = {"u": user, "v": valid_at, "k": known_at}
        rows = await self.db.fetch(_SQLITE_VECTORS, times)
        nearest: list[tuple[str, float]] = []
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            sims = matrix.reshape(len(rows), -1) @ vec.astype(np.float32)
            order = np.argsort(-sims, kind="stable")[:DEPTH]
            nearest = [(rows[i][0], float(sims[i])) for i in order]
        terms = json.dumps([_term_range(t) for t in query_terms(text)])
        found = await self.db.fetch(
            SQLITE_FACT_HYBRID, {**times, "dense": json.dumps(nearest), "terms": terms, "limit": k}
        )
        return [r[0] for r in found]
