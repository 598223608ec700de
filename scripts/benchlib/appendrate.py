"""Part 3 of scripts/bench_live.py: sequential ``threads.append`` rates, trees and baselines.

Each rate is a process of its own on a fresh database: ``threads.append`` of this
source tree or of a ``git archive`` of an older revision, or the same append written
by hand on the raw driver (:mod:`benchlib.appendraw`).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchlib.servers import Databases
from memstore.schema.migrate import upgrade

__all__ = ["appends_per_second", "baseline_revision", "throughput"]

ROOT = Path(__file__).resolve().parents[2]


_THROUGHPUT_CHILD = """
import asyncio, sys, time
from memstore import MemoryStore

async def main(url: str, n: int) -> None:
    async with MemoryStore.open(url, auto_migrate=True) as store:
        for i in range(50):  # warm-up: connections, statement caches
            await store.threads.append("warm", i, from_id="A", to_id="B", user_id="bench")
        start = time.perf_counter()
        for i in range(n):
            await store.threads.append("t", {"task": i}, from_id="A", to_id="B", user_id="bench")
        print(n / (time.perf_counter() - start))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def baseline_revision() -> str:
    """The commit before memstore/services/changes.py (the change feed) was added."""
    added = subprocess.run(
        [
            "git",
            "-C",
            str(ROOT),
            "log",
            "--format=%H",
            "--diff-filter=A",
            "--",
            "memstore/services/changes.py",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not added:
        raise RuntimeError("no commit adds memstore/services/changes.py: nothing to compare with")
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", f"{added[-1]}^"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _export(revision: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "memstore", "migrations"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


_RAW = {"sqlite": ("aiosqlite", "aiosqlite-one-call"), "postgres": ("asyncpg",)}
_RAW_LABELS = {
    "asyncpg": "asyncpg, one CTE statement",
    "aiosqlite": "aiosqlite, BEGIN + 4 statements + COMMIT, one call each",
    "aiosqlite-one-call": "aiosqlite, the same as one call on its thread",
}


def appends_per_second(tree: Path, url: str, n: int, raw: str | None = None) -> float:
    """Sequential appends a second: ``threads.append`` of ``tree``, or the ``raw`` baseline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env["PYTHONPATH"] = str(tree)
    if raw is None:
        command = [sys.executable, "-c", _THROUGHPUT_CHILD, url, str(n)]
    else:
        asyncio.run(upgrade(url))  # memstore's schema, before the hand-written appends
        command = [sys.executable, str(ROOT / "scripts/benchlib/appendraw.py"), raw, url, str(n)]
    done = subprocess.run(
        command,
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return float(done.stdout.split()[-1])


def throughput(args: Any, backends: list[str], dbs: Databases, fresh: Any) -> None:
    """Part 3: memstore's trees and the hand-written appends, interleaved, in one table."""
    base = baseline_revision()
    root = Path(tempfile.mkdtemp(prefix="tree-", dir=dbs.root))
    trees = {"now": ROOT, base: _export(base, root / base)}
    for revision in args.also:
        trees[revision] = _export(revision, root / revision)
    print(
        f"\n## Append throughput: this tree vs {', '.join(list(trees)[1:])} and the hand-written "
        f"append, {args.appends} sequential appends, median of {args.rounds}\n"
    )
    print(f"({base}: the commit before the change feed)\n")
    print("| backend | append | appends/s | now / this |")
    print("|---|---|---|---|")
    for backend in backends:
        runs: list[tuple[str, Path, str | None]] = [
            (label, tree, None) for label, tree in trees.items()
        ]
        runs += [(_RAW_LABELS[raw], ROOT, raw) for raw in _RAW[backend]]
        rates: dict[str, list[float]] = {label: [] for label, _, _ in runs}
        for _ in range(args.rounds):
            for label, tree, raw in runs:
                url = fresh(backend, "raw" if raw else "tree")
                rates[label].append(appends_per_second(tree, url, args.appends, raw))
        now = statistics.median(rates["now"])
        for label, _, raw in runs:
            rate = statistics.median(rates[label])
            name = label if raw else f"threads.append at {label}"
            print(f"| {backend} | {name} | {rate:.0f} | {now / rate:.2f}x |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
