"""Scenario 4: recall_facts(valid_at, known_at) and fact_history at many fact versions.

The history is written straight into the facts table (raw bulk load) in the shape
memstore's corrections produce: for a chain of values v1..vk of one single-valued
(subject, predicate), each correction supersedes the old current row, records a
copy of it ending where the new value begins, and records the new value, so a
chain of k values is 2k-1 versions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memstore.models.facts import subject_key

from .context import Context, Target
from .data import EPOCH, tenant_name
from .memapi import open_store
from .paired import run_paired
from .raw import SqliteQueries, pg_connect, pg_copy, sqlite_connect, sqlite_insert
from .rows import raw_records
from .stats import Section

__all__ = ["raw_statements", "run"]

CHAIN = 10  # values per (subject, predicate): 19 versions
LONG_CHAIN = 1_000  # one (subject, predicate) with 1,999 versions
PREDICATES = ("lives_in", "works_at")
CITIES = [f"city{i:03d}" for i in range(500)]


Chain = tuple[int, int, str, int]  # tenant, subject number, predicate, values
LONG_SUBJECT = 99_999


def _chains(n_versions: int, n_tenants: int) -> list[Chain]:
    per_chain = 2 * CHAIN - 1
    n_chains = max(1, (n_versions - (2 * LONG_CHAIN - 1)) // per_chain)
    chains = [(c % n_tenants, c // n_tenants, PREDICATES[c % 2], CHAIN) for c in range(n_chains)]
    return [*chains, (0, LONG_SUBJECT, "lives_in", LONG_CHAIN)]


def _versions(
    chain_no: int,
    tenant: int,
    subject_no: int,
    predicate: str,
    length: int,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    user, subject = tenant_name(tenant), f"person{subject_no:05d}"
    starts = np.sort(rng.integers(0, 86_400 * 700, size=length))
    lags = rng.integers(60, 86_400 * 20, size=length)
    values = rng.choice(CITIES, size=length)
    rows: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for i in range(length):
        valid_from = EPOCH + timedelta(seconds=int(starts[i]) + i)
        recorded = valid_from + timedelta(seconds=int(lags[i]))
        if current is not None:
            recorded = max(recorded, current["recorded_at"] + timedelta(seconds=1))
            current["superseded_at"] = recorded
            rows.append(
                {
                    **current,
                    "id": f"v{chain_no}-{i}-c",
                    "valid_to": valid_from,
                    "recorded_at": recorded,
                    "superseded_at": None,
                }
            )
        current = {
            "user_id": user,
            "id": f"v{chain_no}-{i}",
            "fact_id": f"f{chain_no}-{i}",
            "subject": subject,
            "subject_key": subject_key(subject),
            "predicate": predicate,
            "object": str(values[i]),
            "single_valued": True,
            "confidence": 0.9,
            "sources": [],
            "valid_from": valid_from,
            "valid_to": None,
            "recorded_at": recorded,
            "superseded_at": None,
        }
        rows.append(current)
    return rows


async def _load(target: Target, chains: list[Chain]) -> int:
    from sqlalchemy import Table
    from sqlalchemy.dialects import postgresql, sqlite

    from memstore.models import FactRow

    table = FactRow.__table__
    assert isinstance(table, Table)  # typed as any FromClause; a declarative table here
    pg = target.backend == "postgres"
    # SQLAlchemy leaves PGDialect.__init__ unannotated.
    dialect = postgresql.asyncpg.dialect() if pg else sqlite.dialect()  # type: ignore[no-untyped-call]
    # An asyncpg connection (untyped) when pg, else a sqlite3.Connection.
    conn: Any = await pg_connect(target.raw) if pg else sqlite_connect(target.raw)
    rng = np.random.default_rng(41)
    total = 0
    try:
        for lo in range(0, len(chains), 2_000):
            values = [
                v
                for n, (t, s, p, k) in enumerate(chains[lo : lo + 2_000], start=lo)
                for v in _versions(n, t, s, p, k, rng)
            ]
            names, records = raw_records(table, dialect, values)
            if pg:
                await pg_copy(conn, table.name, names, records)
            else:
                sqlite_insert(conn, table.name, names, records)
            total += len(records)
        if pg:
            await conn.execute("ANALYZE facts")
        else:
            conn.execute("ANALYZE")
    finally:
        await conn.close() if pg else conn.close()
    return total


_AS_OF = (
    "user_id = {u} AND valid_from <= {v} AND (valid_to IS NULL OR valid_to > {v}) "
    "AND recorded_at <= {k} AND (superseded_at IS NULL OR superseded_at > {k})"
)


def raw_statements(pg: bool) -> tuple[str, str, str]:
    """The hand-written baselines: as-of by subject, as-of by (subject, predicate), history."""
    if pg:
        as_of = _AS_OF.format(u="$1", v="$2", k="$3")
        by_subject, by_predicate, params = "$4", "$5", ("$1", "$2", "$3")
    else:
        as_of = _AS_OF.format(u=":u", v=":v", k=":k")
        by_subject, by_predicate, params = ":s", ":p", (":u", ":s", ":p")
    recall_sql = f"SELECT * FROM facts WHERE {as_of} AND subject_key = {by_subject} LIMIT 10"
    facts_sql = (
        f"SELECT * FROM facts WHERE {as_of} AND subject_key = {by_subject} "
        f"AND predicate = {by_predicate} ORDER BY recorded_at DESC, id LIMIT 10"
    )
    hist_sql = (
        f"SELECT * FROM facts WHERE user_id = {params[0]} AND subject_key = {params[1]} "
        f"AND predicate = {params[2]} ORDER BY valid_from, recorded_at, id"
    )
    return recall_sql, facts_sql, hist_sql


async def _measure(
    ctx: Context, target: Target, picks: list[Chain], label: str, section: Section, versions: int
) -> None:
    rng = np.random.default_rng(43)
    qs = []
    for t, s, p, _ in picks:
        valid_at = EPOCH + timedelta(seconds=int(rng.integers(0, 86_400 * 720)))
        known_at = valid_at + timedelta(seconds=int(rng.integers(0, 86_400 * 60)))
        subject = f"person{s:05d}"
        qs.append((tenant_name(t), subject, p, valid_at, known_at, subject_key(subject)))
    pg = target.backend == "postgres"
    # An asyncpg connection (untyped) when pg, else a SqliteQueries.
    raw: Any = await pg_connect(target.raw) if pg else await SqliteQueries(target.raw).__aenter__()
    fmt: Callable[[datetime], datetime | str] = (
        (lambda d: d) if pg else (lambda d: d.replace(tzinfo=None).isoformat(" "))
    )
    recall_sql, facts_sql, hist_sql = raw_statements(pg)

    async def raw_query(sql: str, *params: Any) -> list[Any]:
        if pg:
            return list(await raw.fetch(sql, *params))
        names = {3: ("u", "s", "p"), 4: ("u", "v", "k", "s"), 5: ("u", "v", "k", "s", "p")}[
            len(params)
        ]
        rows: list[Any] = await raw.fetch(sql, dict(zip(names, params, strict=True)))
        return rows

    try:
        async with open_store(target.url) as store:
            paired = await run_paired(
                qs,
                {
                    "memstore recall_facts": lambda q: store.recall_facts(
                        q[1], user_id=q[0], limit=10, valid_at=q[3], known_at=q[4]
                    ),
                    "raw SQL as-of": lambda q: raw_query(
                        recall_sql, q[0], fmt(q[3]), fmt(q[4]), q[5]
                    ),
                },
            )
            structured = await run_paired(
                qs,
                {
                    "memstore facts (as-of)": lambda q: store.facts(
                        user_id=q[0],
                        subject=q[1],
                        predicate=q[2],
                        valid_at=q[3],
                        known_at=q[4],
                        limit=10,
                    ),
                    "raw SQL as-of (subject, predicate)": lambda q: raw_query(
                        facts_sql, q[0], fmt(q[3]), fmt(q[4]), q[5], q[2]
                    ),
                },
            )
            hist = await run_paired(
                qs,
                {
                    "memstore fact_history": lambda q: store.fact_history(
                        user_id=q[0], subject=q[1], predicate=q[2]
                    ),
                    "raw SQL history": lambda q: raw_query(hist_sql, q[0], q[5], q[2]),
                },
            )
    finally:
        await raw.close() if pg else await raw.__aexit__()
    limits = {"memstore facts (as-of)": 1.5, "memstore fact_history": 2.0}
    for result, (mem, base) in (
        (paired, ("memstore recall_facts", "raw SQL as-of")),
        (structured, ("memstore facts (as-of)", "raw SQL as-of (subject, predicate)")),
        (hist, ("memstore fact_history", "raw SQL history")),
    ):
        rows_m = np.mean([len(r) for r in result.results[mem]])
        rows_r = np.mean([len(r) for r in result.results[base]])
        for name, rows in ((mem, rows_m), (base, rows_r)):
            section.add(
                backend=target.backend,
                versions=f"{versions:,}",
                queries=label,
                path=name,
                **result.cells(name, base),
                **{"rows/query": f"{rows:.1f}"},
            )
        p50 = result.samples[mem].p50 / result.samples[base].p50
        limit = limits.get(mem)
        section.target(
            f"bi-temporal {target.backend} {mem.split(maxsplit=1)[1]} ({label}): p50 "
            + (f"<= {limit}x raw SQL" if limit else "vs raw SQL"),
            f"{p50:.2f}x",
            None if limit is None else p50 <= limit,
        )
        if mem == "memstore facts (as-of)":
            same = sum(
                len(m) == len(r)
                for m, r in zip(result.results[mem], result.results[base], strict=True)
            )
            section.note(
                f"{target.backend} {label}: store.facts returned as many rows as the raw "
                f"as-of query on {same}/{len(result.results[mem])} queries."
            )


def run(ctx: Context) -> Section:
    n = ctx.args.temporal_versions
    section = Section(
        f"4. Bi-temporal: recall_facts, store.facts (as-of) and fact_history ({n:,} fact versions)"
    )
    tenants = max(1, n // 10_000)
    chains = _chains(n, tenants)
    section.note(
        f"{len(chains) - 1:,} single-valued (subject, predicate) chains of {CHAIN} "
        f"values ({2 * CHAIN - 1} versions each) over {tenants} tenants, plus one chain "
        f"of {LONG_CHAIN:,} values ({2 * LONG_CHAIN - 1:,} versions); queries pick a "
        "random chain and random valid_at / known_at."
    )
    section.note(
        "Raw baselines: the as-of filter `valid_from <= T < valid_to` and "
        "`recorded_at <= K < superseded_at` on the tenant + subject, LIMIT 10; "
        "history: all versions of (tenant, subject, predicate) ordered like "
        "fact_history. Both use the indexes memstore's migrations create."
    )
    for backend in ctx.backends:
        target = ctx.fresh(backend, "temporal")
        start = time.perf_counter()
        loaded = asyncio.run(_load(target, chains))
        section.note(
            f"{backend}: loaded {loaded:,} versions by raw bulk insert in "
            f"{time.perf_counter() - start:.0f} s."
        )
        ctx.log(f"  temporal {backend}: {loaded:,} versions loaded")
        rng = np.random.default_rng(42)
        short = [chains[int(i)] for i in rng.integers(0, len(chains) - 1, size=ctx.args.queries)]
        asyncio.run(
            _measure(ctx, target, short, f"{2 * CHAIN - 1}-version chains", section, loaded)
        )
        asyncio.run(
            _measure(
                ctx,
                target,
                [chains[-1]] * max(5, ctx.args.queries // 4),
                f"one {2 * LONG_CHAIN - 1:,}-version chain",
                section,
                loaded,
            )
        )
    return section
