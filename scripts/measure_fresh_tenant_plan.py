"""Postgres recall on a tenant the planner has no statistics for, before and after ANALYZE.

Postgres plans from the statistics that ANALYZE (or autovacuum's analyze) gathered.
A tenant whose rows were all written since then (the first big tenant of a new
database, a bulk import) is not in them, and ``user_id = :user`` is estimated at
one row. This script builds that case on a private PostgreSQL (pgserver, stopped
and checked at the end):

1. a fresh database; a small tenant is written and ``episodes`` analysed (what
   autovacuum does soon after a database's first writes), then autovacuum is
   switched off for ``episodes`` so that nothing analyses it during the run;
2. one tenant of ``--episodes`` long episodes (synthetic words drawn from a
   Zipf distribution; passages embedded as ``SentenceTransformerEmbedder`` does
   for long texts, with the built-in hashing embedder);
3. recall p50 (``store.recall_scored``, limit 10, hybrid) of the same queries
   before ``ANALYZE episodes`` and after, and their ratio.

``--never-analysed`` skips the small tenant's ANALYZE: the table then has no
statistics at all (the planner guesses 0.5 % of it for the tenant, not one row).

``--compare REV`` also measures the memstore code of git revision REV (extracted
with ``git archive``) on the same database, interleaved with this tree's, and
compares the rows, scores and score parts the two return, exactly.

    python scripts/measure_fresh_tenant_plan.py
    python scripts/measure_fresh_tenant_plan.py --episodes 5000 --compare a962df9

Every recall runs in a child process whose ``memstore`` comes from the code being
measured; absolute times drift on a shared machine, read the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import json
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# A child process imports the code tree it is measuring: ``--child CODE URL QUERIES OUT``.
CODE = sys.argv[2] if len(sys.argv) == 6 and sys.argv[1] == "--child" else str(REPO)
sys.path.insert(0, CODE)

import numpy as np  # noqa: E402

from memstore import Episode, MemoryStore  # noqa: E402
from memstore.embeddings import HashingEmbedder  # noqa: E402

TENANT = "late"
LIMIT = 10
PHASES = ("before ANALYZE", "after ANALYZE")
PASSAGE_WORDS, PASSAGE_STEP = 95, 48  # about 128 word pieces, half-passage steps


class PassageHashing(HashingEmbedder):
    """The hashing embedder, with passages cut the way the shipped embedder cuts them."""

    async def embed_passages(self, texts: list[str]) -> list[np.ndarray]:
        out = []
        for t in texts:
            words = t.split()
            if len(words) <= PASSAGE_WORDS:
                out.append(np.zeros((0, self.dim), np.float32))
                continue
            chunks = [
                " ".join(words[i : i + PASSAGE_WORDS]) for i in range(0, len(words), PASSAGE_STEP)
            ]
            out.append(np.asarray(await self.embed(chunks)))
        return out


class Words:
    """A fixed vocabulary of made-up words with Zipf frequencies (rank r: 1/r)."""

    def __init__(self, size: int = 30_000) -> None:
        rng = random.Random(7)
        words: set[str] = set()
        while len(words) < size:
            words.add(
                "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 9)))
            )
        self.words = sorted(words)
        rng.shuffle(self.words)
        weights = 1.0 / np.arange(1, size + 1)
        self.p = weights / weights.sum()

    def text(self, rng: np.random.Generator, n: int) -> str:
        return " ".join(self.words[i] for i in rng.choice(len(self.words), size=n, p=self.p))

    def query(self, rng: np.random.Generator, n: int = 4, skip: int = 500) -> str:
        # the most frequent words play the part of stop words: queries skip them
        tail = self.p[skip:] / self.p[skip:].sum()
        return " ".join(self.words[skip + i] for i in rng.choice(len(tail), size=n, p=tail))


# ---- child: recall with one code tree ------------------------------------------------


async def child(url: str, queries: list[str]) -> dict[str, Any]:
    latencies: list[float] = []
    rows: dict[str, Any] = {}
    async with MemoryStore.open(url, embedder=PassageHashing()) as store:
        for q in queries[:2]:  # connections, caches
            await store.recall_scored(q, user_id=TENANT, limit=LIMIT)
        for q in queries:
            started = time.perf_counter()
            found = await store.recall_scored(q, user_id=TENANT, limit=LIMIT)
            latencies.append((time.perf_counter() - started) * 1000)
            rows[q] = [[m.episode.id, m.score, sorted(m.parts.items())] for m in found]
    return {"latencies": latencies, "rows": rows}


# ---- parent: the database, the phases, the report -------------------------------------


async def sql(url: str, *statements: str) -> list[Any]:
    from memstore.db.engine import create_engine

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    results = []
    try:
        async with engine.connect() as conn:
            for statement in statements:
                result = await conn.exec_driver_sql(statement)
                results.append(result.all() if result.returns_rows else [])
    finally:
        await engine.dispose()
    return results


async def tenant_estimate(url: str) -> str:
    (plan,) = await sql(url, f"EXPLAIN SELECT id FROM episodes WHERE user_id = '{TENANT}'")
    return str(plan[0][0]).split("rows=")[1].split()[0]


async def load(url: str, args: argparse.Namespace, words: Words) -> None:
    from memstore.schema.migrate import upgrade

    await upgrade(url)
    await sql(url, "ALTER TABLE episodes SET (autovacuum_enabled = off)")
    rng = np.random.default_rng(1)
    async with MemoryStore.open(url, embedder=PassageHashing()) as store:
        if not args.never_analysed:
            await store.remember_many(
                [
                    Episode(user_id="early", session_id=f"s{i // 20}", input=words.text(rng, 20))
                    for i in range(200)
                ]
            )
            await sql(url, "ANALYZE episodes")
        started = time.perf_counter()
        batch: list[Episode] = []
        for i in range(args.episodes):
            batch.append(
                Episode(
                    user_id=TENANT,
                    session_id=f"s{i // 20}",
                    input=words.text(rng, 20),
                    output=words.text(rng, args.words),
                )
            )
            if len(batch) == 500:
                await store.remember_many(batch)
                batch = []
        if batch:
            await store.remember_many(batch)
        print(f"ingest: {args.episodes} episodes in {time.perf_counter() - started:.0f} s")


def extract(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "memstore", "migrations"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_child(code: Path, url: str, queries: list[str], work: Path) -> dict[str, Any]:
    qfile, out = work / "queries.json", work / "out.json"
    qfile.write_text(json.dumps(queries))
    subprocess.run(
        [sys.executable, __file__, "--child", str(code), url, str(qfile), str(out)], check=True
    )
    return dict(json.loads(out.read_text()))


def same_rows(a: dict[str, Any], b: dict[str, Any], *, tolerance: float = 0.0) -> bool:
    for q, rows in a.items():
        other = b[q]
        if [r[0] for r in rows] != [r[0] for r in other]:
            return False
        for (_, s1, p1), (_, s2, p2) in zip(rows, other, strict=True):
            if abs(s1 - s2) > tolerance:
                return False
            if any(
                abs(x[1] - y[1]) > tolerance or x[0] != y[0] for x, y in zip(p1, p2, strict=True)
            ):
                return False
    return True


def main(args: argparse.Namespace) -> None:
    from sqlalchemy.engine import make_url

    # The tests' own server helper (stops the server and checks it is gone); imported
    # by name so that type checking of scripts/ does not extend to tests/.
    private_pgserver = importlib.import_module("tests.pg_servers").private_pgserver

    words = Words()
    rng = np.random.default_rng(99)
    queries = [words.query(rng) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory(prefix="memstore-fresh-plan-") as tmp:
        work = Path(tmp)
        codes = {"this tree": REPO}
        if args.compare:
            codes[args.compare] = extract(args.compare, work / "old")
        with private_pgserver("memstore-fresh-plan-") as (server, _pids):
            url = (
                make_url(server.get_uri())
                .set(drivername="postgresql+asyncpg")
                .render_as_string(hide_password=False)
            )
            asyncio.run(load(url, args, words))
            (version,) = asyncio.run(sql(url, "SHOW server_version"))
            print(
                f"postgres {version[0][0]}; tenant {TENANT!r}: {args.episodes} episodes of "
                f"{args.words + 20} words; {len(queries)} queries x {args.rounds} rounds, "
                f"limit {LIMIT}; statistics: "
                + ("none (never analysed)" if args.never_analysed else "taken before the tenant")
            )
            results: dict[str, dict[str, Any]] = {}
            for phase in PHASES:
                if phase == PHASES[1]:
                    asyncio.run(sql(url, "ANALYZE episodes"))
                estimate = asyncio.run(tenant_estimate(url))
                print(f"{phase}: planner's estimate for the tenant's rows: {estimate}")
                for name in codes:
                    results[f"{name}|{phase}"] = {"latencies": [], "rows": {}}
                for _ in range(args.rounds):
                    for name, code in codes.items():
                        got = run_child(code, url, queries, work)
                        into = results[f"{name}|{phase}"]
                        into["latencies"] += got["latencies"]
                        into["rows"] = got["rows"]
    print()
    print(
        f"{'code':<14} {'before ANALYZE':>15} {'after ANALYZE':>15} {'ratio':>7}   (recall p50, ms)"
    )
    for name in codes:
        before = statistics.median(results[f"{name}|before ANALYZE"]["latencies"])
        after = statistics.median(results[f"{name}|after ANALYZE"]["latencies"])
        print(f"{name:<14} {before:>15.1f} {after:>15.1f} {before / after:>7.2f}")
    for name in codes:
        before, after = (results[f"{name}|{phase}"]["rows"] for phase in PHASES)
        # Exactly equal is not expected here: BM25 sums a row's terms in the order
        # the plan produces them, so a score can move in its last bits.
        print(
            f"{name}: same rows and order before and after ANALYZE, scores within 1e-9: "
            f"{same_rows(before, after, tolerance=1e-9)}"
        )
    if args.compare:
        for phase in PHASES:
            ours, theirs = (results[f"{name}|{phase}"]["rows"] for name in codes)
            print(
                f"{phase}: this tree and {args.compare} return the same rows, scores and "
                f"parts, exactly: {same_rows(ours, theirs)}"
            )


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        url, qfile, out = sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5])
        out.write_text(json.dumps(asyncio.run(child(url, json.loads(qfile.read_text())))))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--words", type=int, default=400, help="words in each episode's output")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--never-analysed", action="store_true")
    parser.add_argument(
        "--compare", metavar="REV", help="also measure the code of this git revision"
    )
    main(parser.parse_args())
