"""Why memstore's hybrid recall statement on Postgres costs more than the hand-written RRF one.

Runs on a recall database kept by ``scripts/bench.py --scenario recall --quick --keep
--workdir DIR --recall-rows-pg 12000`` (its 1-index tenant has 400 rows). Starts the
kept pgserver itself and stops it at the end. Captures the statement memstore sends
for each query (memstore.db.observers), then on one raw asyncpg connection:
EXPLAIN (ANALYZE, BUFFERS) of both statements, and interleaved p50 timings of both
(and of memstore's with its candidate depth set to the baseline's) under the plan
choices that apply.

    PYTHONPATH=$PWD python scripts/measure_hybrid_gap.py /tmp/hybridgap-db --runs 200
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.data import tenant_name
from benchlib.keptdb import kept_recall_database, recall_queries
from benchlib.memapi import LookupEmbedder, open_store
from benchlib.raw import pg_connect
from benchlib.rawrecall import HYBRID, words
from benchlib.servers import sqlalchemy_url

__all__ = ["main"]

ROWS = 12_000
TENANTS = {1: 2, 0: 1}  # tenant index -> the benchmark's query salt; 1 has 400 rows, 0 2,400


def _queries(tenant: int, n: int) -> list[tuple[str, Any]]:
    return recall_queries(ROWS, tenant, n, salt=TENANTS[tenant])


async def _capture(
    url: str, tenant: int, queries: list[tuple[str, Any]]
) -> list[tuple[str, tuple[Any, ...]]]:
    from memstore.db.observers import observe

    embedder = LookupEmbedder()
    for text, vec in queries:
        embedder.register(text, vec)
    sent: list[Any] = []
    out = []
    async with open_store(url, embedder) as store:
        for text, _ in queries:
            sent.clear()
            remove = observe(before=sent.append)
            try:
                await store.recall(text, user_id=tenant_name(tenant), limit=10)
            finally:
                remove()
            big = max(sent, key=lambda e: len(e.sql))
            out.append((big.sql, tuple(big.parameters)))
    return out


def _explain_summary(plan: str) -> str:
    got = re.findall(r"(Planning Time|Execution Time): ([\d.]+) ms", plan)
    return ", ".join(f"{k} {v} ms" for k, v in got)


STAGES = ("dense", "kw", "cand", "fused", "pool", "scored", "top")


def _prefix(sql: str, stage: str) -> str:
    """memstore's statement cut after CTE ``stage``, returning that CTE's rows."""
    sql = re.sub(r"^--.*\n", "", sql, flags=re.M)
    starts = [m.start() for m in re.finditer(r"^(WITH )?\w+(\([^)]*\))? AS \(", sql, re.M)]
    starts.append(re.search(r"^SELECT e\.user_id", sql, re.M).start())  # type: ignore[union-attr]
    own = re.search(rf"^(WITH )?{stage}[ (]", sql, re.M).start()  # type: ignore[union-attr]
    body = sql[: min(x for x in starts if x > own)].rstrip().rstrip(",")
    return f"{body}\nSELECT * FROM {stage}"


def _args_for(sql: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    used = {int(n) for n in re.findall(r"\$(\d+)", sql)}
    top = max(used)
    assert used == set(range(1, top + 1)), sorted(set(range(1, top + 1)) - used)
    return args[:top]


def _depth(sql: str, args: tuple[Any, ...], depth: int, pool: int) -> tuple[str, tuple[Any, ...]]:
    """The same statement taking ``depth`` candidates per signal and ``pool`` for passages."""
    sql = re.sub(
        r"GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT \d+",
        f"GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT {depth}",
        sql,
    )
    return sql, (*args[:5], pool, depth, *args[7:])


def _text(rows: list[Any]) -> str:
    return "\n".join(r[0] for r in rows)


async def _timed(conn: Any, sql: str, args: tuple[Any, ...]) -> float:
    start = time.perf_counter()
    await conn.fetch(sql, *args)
    return (time.perf_counter() - start) * 1000


async def _run(dsn: str, url: str, tenant: int, runs: int, out_dir: Path) -> None:
    queries = _queries(tenant, 20)
    captured = await _capture(url, tenant, queries)
    user = tenant_name(tenant)
    base = [
        (HYBRID, (user, vec, " | ".join(f"{w}:*" for w in words(text)), 10))
        for text, vec in queries
    ]
    conn = await pg_connect(dsn)
    try:
        (out_dir / f"memstore-{tenant}.sql").write_text(captured[0][0])
        print("memstore parameters (first query):", [str(p)[:60] for p in captured[0][1]])
        for mode in ("force_custom_plan", "auto", "force_generic_plan"):
            await conn.execute(f"SET plan_cache_mode = {mode}")
            for name, (sql, args) in (("memstore", captured[0]), ("baseline", base[0])):
                for _ in range(6):  # past the 5 custom plans of "auto"
                    await conn.fetch(sql, *args)
                rows = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *args)
                plan = "\n".join(r[0] for r in rows)
                (out_dir / f"explain-{tenant}-{name}-{mode}.txt").write_text(plan)
                print(f"EXPLAIN {name:8s} {mode:18s} {_explain_summary(plan)}")
        same = 0
        for (sql, args), (bsql, bargs) in zip(captured, base, strict=True):
            mine = [r["id"] for r in await conn.fetch(sql, *args)]
            theirs = [r["id"] for r in await conn.fetch(bsql, *bargs)]
            same += len(set(mine) & set(theirs))
        print(f"top-10 overlap memstore vs baseline: {same}/{10 * len(base)}")
        differ = 0
        for sql, args in captured:
            await conn.execute("SET plan_cache_mode = force_custom_plan")
            custom = [tuple(r) for r in await conn.fetch(sql, *args)]
            await conn.execute("SET plan_cache_mode = force_generic_plan")
            generic = [tuple(r) for r in await conn.fetch(sql, *args)]
            differ += custom != generic
        print(f"memstore rows, generic plan vs custom plan: {differ}/{len(captured)} differ")
        variants: dict[str, tuple[str, list[tuple[str, tuple[Any, ...]]]]] = {
            "memstore, custom plan (as memstore runs it)": ("force_custom_plan", captured),
            "baseline, custom plan": ("force_custom_plan", base),
            "baseline, plan_cache_mode auto (as the benchmark runs it)": ("auto", base),
            "memstore, plan_cache_mode auto": ("auto", captured),
            "memstore, generic plan": ("force_generic_plan", captured),
            "memstore, depth 50 (passage pool 500), custom plan": (
                "force_custom_plan",
                [_depth(s, a, 50, 500) for s, a in captured],
            ),
            "memstore, depth 50, passage pool 50, custom plan": (
                "force_custom_plan",
                [_depth(s, a, 50, 50) for s, a in captured],
            ),
        }
        for stage in STAGES:
            variants[f"memstore prefix up to {stage}, custom plan"] = (
                "force_custom_plan",
                [(_prefix(s, stage), _args_for(_prefix(s, stage), a)) for s, a in captured],
            )
        # Server-side planning and execution (EXPLAIN ANALYZE, TIMING OFF), each plan
        # choice's first statement, the variants interleaved round by round.
        server: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
        for _ in range(41):
            for name, (mode, stmts) in variants.items():
                sql, args = stmts[0]
                await conn.execute(f"SET plan_cache_mode = {mode}")
                rows = await conn.fetch("EXPLAIN (ANALYZE, TIMING OFF, SUMMARY) " + sql, *args)
                got = dict(re.findall(r"(Planning|Execution) Time: ([\d.]+)", _text(rows)))
                server[name].append((float(got["Planning"]), float(got["Execution"])))
        for name, pairs in server.items():
            planning = statistics.median(p for p, _ in pairs)
            execution = statistics.median(e for _, e in pairs)
            print(f"server p50: planning {planning:6.3f} ms, execution {execution:6.3f} ms  {name}")
        times: dict[str, list[float]] = {k: [] for k in variants}
        names = list(variants)
        for i in range(runs):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                mode, stmts = variants[name]
                sql, args = stmts[i % len(stmts)]
                await conn.execute(f"SET plan_cache_mode = {mode}")
                times[name].append(await _timed(conn, sql, args))
        for name, t in times.items():
            print(f"p50 {statistics.median(t):7.3f} ms  {name}")
    finally:
        await conn.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workdir", type=Path)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--tenant", type=int, choices=sorted(TENANTS), default=1)
    a = p.parse_args()
    with kept_recall_database(a.workdir) as dsn:
        asyncio.run(_run(dsn, sqlalchemy_url(dsn), a.tenant, a.runs, a.workdir))


if __name__ == "__main__":
    main()
