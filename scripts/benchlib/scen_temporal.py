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
from .data import DIM, EPOCH, tenant_name
from .memapi import LookupEmbedder, open_store
from .paired import run_paired
from .raw import SqliteQueries, pg_connect, pg_copy, sqlite_connect, sqlite_insert
from .rawfacts import COLUMNS, PgFacts, SqliteFacts
from .rows import raw_records
from .stats import Section

__all__ = ["raw_statements", "run"]

CHAIN = 10  # values per (subject, predicate): 19 versions
LONG_CHAIN = 1_000  # one (subject, predicate) with 1,999 versions
PREDICATES = ("lives_in", "works_at")
CITIES = [f"city{i:03d}" for i in range(500)]
_NOISE = 1.1  # spread of a version's vector around its city's (cosine about 0.67)


def _unit(m: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)
    return unit


# Each version's vector lies near its value's (city's) centre, so a query vector
# near a city finds that city's versions, as keyword terms find the subject's.
CENTRES = _unit(np.random.default_rng(40).standard_normal((len(CITIES), DIM)))


Chain = tuple[int, int, str, int]  # tenant, subject number, predicate, values
LONG_SUBJECT = 99_999

RECALL_BASELINE = "hand-written hybrid fact SQL"
LIMITS = {"memstore recall_facts": 1.3, "memstore facts (as-of)": 1.5, "memstore fact_history": 1.5}
GUARD = "same version ids in the same order"


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
    cities = rng.integers(0, len(CITIES), size=length)
    noise = _unit(rng.standard_normal((length, DIM))) * _NOISE
    vectors = _unit(CENTRES[cities] + noise)
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
            "object": CITIES[int(cities[i])],
            "single_valued": True,
            "confidence": 0.9,
            "sources": [],
            "valid_from": valid_from,
            "valid_to": None,
            "recorded_at": recorded,
            "superseded_at": None,
            "embedding": vectors[i],
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


def raw_statements(pg: bool) -> tuple[str, str]:
    """The hand-written baselines: as-of by (subject, predicate), and history.

    They read the columns memstore's Fact is made of (not the embedding).
    """
    if pg:
        as_of = _AS_OF.format(u="$1", v="$2", k="$3")
        by_subject, by_predicate, params = "$4", "$5", ("$1", "$2", "$3")
    else:
        as_of = _AS_OF.format(u=":u", v=":v", k=":k")
        by_subject, by_predicate, params = ":s", ":p", (":u", ":s", ":p")
    facts_sql = (
        f"SELECT {COLUMNS} FROM facts WHERE {as_of} AND subject_key = {by_subject} "
        f"AND predicate = {by_predicate} ORDER BY recorded_at DESC, id LIMIT 10"
    )
    hist_sql = (
        f"SELECT {COLUMNS} FROM facts WHERE user_id = {params[0]} AND subject_key = {params[1]} "
        f"AND predicate = {params[2]} ORDER BY valid_from, recorded_at, id"
    )
    return facts_sql, hist_sql


Query = tuple[str, str, str, datetime, datetime, str, str]


def _queries(picks: list[Chain], embedder: LookupEmbedder) -> list[Query]:
    """(tenant, subject, predicate, valid_at, known_at, subject key, recall text) per pick.

    The recall text names the subject and a random city, which both select a few
    versions by keyword; its vector, registered with the lookup embedder, lies near
    that city's, so the dense signal favours the city's versions.
    """
    rng = np.random.default_rng(43)
    qs = []
    for t, s, p, _ in picks:
        valid_at = EPOCH + timedelta(seconds=int(rng.integers(0, 86_400 * 720)))
        known_at = valid_at + timedelta(seconds=int(rng.integers(0, 86_400 * 60)))
        subject = f"person{s:05d}"
        city = int(rng.integers(0, len(CITIES)))
        text = f"{subject} {CITIES[city]}"
        near = _unit(CENTRES[city] + _unit(rng.standard_normal(DIM)) * _NOISE)
        if text not in embedder.known:  # a chain picked twice keeps its first vector
            embedder.register(text, near)
        qs.append((tenant_name(t), subject, p, valid_at, known_at, subject_key(subject), text))
    return qs


async def _measure(
    ctx: Context, target: Target, picks: list[Chain], label: str, section: Section, versions: int
) -> None:
    embedder = LookupEmbedder()
    qs = _queries(picks, embedder)
    pg = target.backend == "postgres"
    # An asyncpg connection (untyped) when pg, else a SqliteQueries.
    raw: Any = await pg_connect(target.raw) if pg else await SqliteQueries(target.raw).__aenter__()
    hybrid = PgFacts(raw) if pg else SqliteFacts(raw)
    fmt: Callable[[datetime], datetime | str] = (
        (lambda d: d) if pg else (lambda d: d.replace(tzinfo=None).isoformat(" "))
    )
    facts_sql, hist_sql = raw_statements(pg)

    async def raw_query(sql: str, *params: Any) -> list[Any]:
        if pg:
            return list(await raw.fetch(sql, *params))
        names = {3: ("u", "s", "p"), 5: ("u", "v", "k", "s", "p")}[len(params)]
        rows: list[Any] = await raw.fetch(sql, dict(zip(names, params, strict=True)))
        return rows

    try:
        async with open_store(target.url, embedder) as store:
            paired = await run_paired(
                qs,
                {
                    "memstore recall_facts": lambda q: store.recall_facts(
                        q[6], user_id=q[0], limit=10, valid_at=q[3], known_at=q[4]
                    ),
                    RECALL_BASELINE: lambda q: hybrid.recall(
                        q[0], q[6], embedder.known[q[6]], fmt(q[3]), fmt(q[4]), 10
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
    for result, (mem, base) in (
        (paired, ("memstore recall_facts", RECALL_BASELINE)),
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
        limit = LIMITS[mem]
        section.target(
            f"bi-temporal {target.backend} {mem.split(maxsplit=1)[1]} ({label}): "
            f"p50 <= {limit}x {base}",
            f"{p50:.2f}x",
            p50 <= limit,
        )
        same = sum(
            [_id(x) for x in m] == [_id(x) for x in r]
            for m, r in zip(result.results[mem], result.results[base], strict=True)
        )
        section.target(
            f"bi-temporal {target.backend} {mem.split(maxsplit=1)[1]} ({label}): {GUARD} as {base}",
            f"{same}/{len(qs)} queries",
            same == len(qs),
        )


def _id(row: Any) -> str:
    """A version's id: of memstore's Fact, or the first column of a raw row."""
    return str(row if isinstance(row, str) else row.id if hasattr(row, "id") else row[0])


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
        "Raw baselines: store.facts beside the as-of filter `valid_from <= T < valid_to` "
        "and `recorded_at <= K < superseded_at` on the tenant + subject + predicate, "
        "LIMIT 10; fact_history beside all versions of (tenant, subject, predicate) "
        "ordered like fact_history; both read the columns a Fact is made of, through "
        "the indexes memstore's migrations create. recall_facts beside the same hybrid "
        "ranking written by hand (benchlib/rawfacts.py: cosine and BM25 over the "
        "versions as of the two times, z-scored and fused; SQLite scores the vectors "
        "with numpy first); its query names the subject and a random city, and its "
        "vector lies near that city's. Each version's vector lies near its city's."
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
