"""The hand-written statements every ratio is measured against, as the report prints them.

Rendered from the constants the scenarios run, so the document cannot drift from
what was timed.
"""

from __future__ import annotations

from .rawfacts import PG_FACT_HYBRID, SQLITE_FACT_HYBRID
from .rawrecall import DEPTH, HYBRID, RRF_K, VEC_EXACT, VEC_PLANNER
from .scen_temporal import raw_statements

__all__ = ["baseline_lines"]


def _sql(title: str, sql: str) -> list[str]:
    return [f"**{title}**", "", "```sql", sql.strip(), "```", ""]


def baseline_lines() -> list[str]:
    facts_pg, history_pg = raw_statements(pg=True)
    facts_sq, history_sq = raw_statements(pg=False)
    return [
        "## The hand-written baselines",
        "",
        "Postgres statements run through one asyncpg connection (`fetch`, prepared and "
        "cached by asyncpg); SQLite statements through aiosqlite (the driver memstore uses), "
        "one connection. Ingest baselines: asyncpg `copy_records_to_table` (and "
        "`executemany` of one prepared INSERT) on Postgres, `sqlite3` `executemany` on "
        "SQLite, one transaction per batch.",
        "",
        *_sql("Postgres, vector, exact (scenarios 2, 3)", VEC_EXACT),
        *_sql(
            "Postgres, vector, as the planner chooses (HNSW post-filter; with "
            "`SET LOCAL hnsw.ef_search = 400` in scenario 3)",
            VEC_PLANNER,
        ),
        *_sql(
            f"Postgres, hybrid: {DEPTH} nearest + {DEPTH} best full-text matches, "
            f"reciprocal rank fusion (k = {RRF_K})",
            HYBRID,
        ),
        "**SQLite, vector and hybrid** (SQLite has no vector SQL): "
        "`SELECT id, embedding FROM episodes WHERE user_id = ? AND embedding IS NOT NULL`, "
        "scored with numpy; hybrid adds `SELECT k.id FROM episodes_fts f JOIN "
        "episodes_fts_keys k ON k.rowid = f.rowid WHERE episodes_fts MATCH ? AND "
        f"k.user_id = ? ORDER BY f.rank LIMIT {DEPTH}` and fuses both lists by RRF in "
        "Python; the rows are then read with `SELECT * FROM episodes WHERE user_id = ? "
        "AND id IN (...)`.",
        "",
        *_sql("Postgres, facts as-of by subject and predicate (beside store.facts)", facts_pg),
        *_sql("Postgres, fact history (beside fact_history)", history_pg),
        *_sql("SQLite, the same two", "\n".join([facts_sq, history_sq])),
        *_sql(
            "Postgres, hybrid fact recall (beside recall_facts): the same ranking, "
            "one statement on asyncpg",
            PG_FACT_HYBRID,
        ),
        "**SQLite, hybrid fact recall** (beside recall_facts): the tenant's vectors as of "
        "the two times read on aiosqlite and scored with numpy (the 200 nearest), then "
        "this statement:",
        "",
        *_sql("", SQLITE_FACT_HYBRID)[2:],
    ]
