"""memstore's exact-scan recall statements under a custom, ``auto`` and generic plan.

Runs on a recall database kept by ``scripts/bench.py --scenario recall --keep --workdir DIR
--recall-rows-pg 50000 --backends postgres`` (tenant 0 has 10,000 rows, 1 has 1,000, 2 has
400). Starts the kept pgserver itself and stops it at the end. Captures the statement
memstore sends (memstore.db.observers) for: vector-only recall of tenants 2 and 1; hybrid
recall with a time_range on tenant 0 (windows of half and a twentieth of its span); hybrid
recall of a copy of tenant 2 inserted after the last ANALYZE (deleted again at the end).
Then, on one raw asyncpg connection, compares each statement's rows under a custom and a
generic plan and times it interleaved under the three modes (p50 and p90, client side).
Statements captured without a time_range are timed a second time without the time filter's
text (``t0 IS NULL OR occurred_at BETWEEN t0 AND t1``), the parameters kept typed in the
dense CTE's select list: the generic plan's row estimates without that filter's guess.

    PYTHONPATH=$PWD python scripts/measure_plan_modes.py /tmp/plan-db --runs 150
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.data import tenant_name
from benchlib.keptdb import kept_recall_database, recall_queries
from benchlib.memapi import LookupEmbedder, open_store
from benchlib.raw import pg_connect
from benchlib.servers import sqlalchemy_url

__all__ = ["main"]

ROWS = 50_000
MODES = ("force_custom_plan", "auto", "force_generic_plan")
FRESH = "fresh-after-analyze"
Statement = tuple[str, tuple[Any, ...]]
_TIMESTAMP = r"CAST\((\$\d+)::TIMESTAMP WITH TIME ZONE AS timestamptz\)"
_TIME_FILTER = re.compile(
    rf"AND \({_TIMESTAMP} IS NULL OR e\.occurred_at BETWEEN {_TIMESTAMP} AND {_TIMESTAMP}\)"
)
_DENSE_SELECT = "e.ctid AS rid FROM episodes AS e"


def _without_time_filter(stmt: Statement) -> Statement:
    sql, args = stmt
    found = _TIME_FILTER.search(sql)
    assert found is not None and _DENSE_SELECT in sql, "memstore's statement changed shape"
    t0, t1 = found.group(1), found.group(3)
    sql = _TIME_FILTER.sub("", sql)
    kept = f"e.ctid AS rid, CAST({t0}::timestamptz AS timestamptz) AS t0_, "
    kept += f"CAST({t1}::timestamptz AS timestamptz) AS t1_ FROM episodes AS e"
    return sql.replace(_DENSE_SELECT, kept, 1), args


def _queries(tenant: int, n: int) -> list[tuple[str, Any]]:
    return recall_queries(ROWS, tenant, n, salt=tenant)


async def _capture(
    url: str,
    user: str,
    queries: list[tuple[str, Any]],
    window: tuple[datetime, datetime] | None = None,
    *,
    dense_only: bool = False,
) -> list[Statement]:
    """The largest statement memstore sends for each query's recall."""
    from memstore.db.observers import Executed, observe
    from memstore.recall import RecallTuning

    options: dict[str, Any] = {}
    if dense_only:
        options["recall_tuning"] = RecallTuning(
            keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0
        )
    out: list[Statement] = []
    for text, vec in queries:
        asked = "?" if dense_only else text  # no keyword terms: only the dense signal
        embedder = LookupEmbedder()
        embedder.register(asked, vec)
        sent: list[Executed] = []
        async with open_store(url, embedder, **options) as store:
            remove = observe(before=sent.append)
            try:
                await store.recall(asked, user_id=user, limit=10, time_range=window)
            finally:
                remove()
        big = max(sent, key=lambda e: len(e.sql))
        out.append((big.sql, tuple(big.parameters)))
    return out


async def _compare(conn: Any, name: str, stmts: list[Statement], runs: int) -> None:
    differ = 0
    for sql, args in stmts:
        await conn.execute("SET plan_cache_mode = force_custom_plan")
        custom = [tuple(r) for r in await conn.fetch(sql, *args)]
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        generic = [tuple(r) for r in await conn.fetch(sql, *args)]
        differ += custom != generic
    print(
        f"{name}: rows of the generic plan differ from the custom plan's on {differ}/{len(stmts)}"
    )
    for mode in MODES:  # past the five custom plans after which auto may go generic
        await conn.execute(f"SET plan_cache_mode = {mode}")
        for sql, args in stmts[:1] * 6:
            await conn.fetch(sql, *args)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    for i in range(runs):
        for mode in MODES[i % 3 :] + MODES[: i % 3]:
            sql, args = stmts[i % len(stmts)]
            await conn.execute(f"SET plan_cache_mode = {mode}")
            start = time.perf_counter()
            await conn.fetch(sql, *args)
            times[mode].append((time.perf_counter() - start) * 1000)
    for mode, t in times.items():
        p90 = statistics.quantiles(t, n=10)[-1]
        print(f"  p50 {statistics.median(t):7.3f} ms  p90 {p90:7.3f} ms  {mode}")


async def _run(dsn: str, url: str, runs: int) -> None:
    conn = await pg_connect(dsn)
    try:
        for tenant in (2, 1):
            stmts = await _capture(url, tenant_name(tenant), _queries(tenant, 20), dense_only=True)
            await _compare(conn, f"vector-only recall, tenant {tenant}", stmts, runs)
            bare = [_without_time_filter(x) for x in stmts]
            await _compare(conn, "  the same without the time filter's text", bare, runs)
        big = tenant_name(0)
        lo, hi = await conn.fetchrow(
            "SELECT min(occurred_at), max(occurred_at) FROM episodes WHERE user_id = $1", big
        )
        span = hi - lo
        for share in (0.5, 0.05):
            window = (lo + span * (0.5 - share / 2), lo + span * (0.5 + share / 2))
            n = await conn.fetchval(
                "SELECT count(*) FROM episodes WHERE user_id = $1 "
                "AND occurred_at BETWEEN $2 AND $3",
                big,
                *window,
            )
            stmts = await _capture(url, big, _queries(0, 20), window)
            await _compare(conn, f"hybrid, time_range on tenant 0, {n} rows in it", stmts, runs)
        columns = [
            r[0]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'episodes' AND column_name NOT IN ('id', 'user_id') "
                "AND is_generated = 'NEVER' ORDER BY ordinal_position"
            )
        ]
        listed = ", ".join(columns)
        await conn.execute("DELETE FROM episodes WHERE user_id = $1", FRESH)
        await conn.execute(
            f"INSERT INTO episodes (id, user_id, {listed}) "
            f"SELECT 'fresh-' || id, $1, {listed} FROM episodes WHERE user_id = $2",
            FRESH,
            tenant_name(2),
        )
        try:
            n = await conn.fetchval("SELECT count(*) FROM episodes WHERE user_id = $1", FRESH)
            stmts = await _capture(url, FRESH, _queries(2, 20))
            await _compare(conn, f"hybrid, {n}-row tenant written after ANALYZE", stmts, runs)
            bare = [_without_time_filter(x) for x in stmts]
            await _compare(conn, "  the same without the time filter's text", bare, runs)
        finally:
            await conn.execute("DELETE FROM episodes WHERE user_id = $1", FRESH)
    finally:
        await conn.close()


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("workdir", type=Path)
    p.add_argument("--runs", type=int, default=150)
    a = p.parse_args()
    with kept_recall_database(a.workdir) as dsn:
        asyncio.run(_run(dsn, sqlalchemy_url(dsn), a.runs))


if __name__ == "__main__":
    main()
