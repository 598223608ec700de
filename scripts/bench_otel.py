"""OpenTelemetry instrumentation: what it costs off, and on, per call.

    python scripts/bench_otel.py                       # SQLite and a private pgserver Postgres
    python scripts/bench_otel.py --backend sqlite --rounds 4 --calls 30

Three worker processes per backend (benchlib/otelworker.py), each on a database of its own
seeded alike (300 episodes, 20 facts, one tenant): ``base``, the tree without the
instrumentation (``--base``, default the merge-base of HEAD and main, checked out in a
temporary git worktree removed at the end); ``off``, this tree with the OpenTelemetry API
imported and no SDK; ``on``, this tree with the SDK, an in-memory span exporter and an
in-memory metric reader. Each round asks every worker in turn (the order rotates) for
--calls calls of ``recall``, ``facts`` and ``threads.append``; the first round is a warm-up.
Per-call p50 and p90 over the other rounds; the ratios to ``base`` are the median over
rounds of each round's ratio of medians (paired within a round, so drift in the machine's
load between rounds cancels).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.servers import Databases, sqlalchemy_url

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "benchlib" / "otelworker.py"
MODES = ("base", "off", "on")
OPS = ("recall", "facts", "append")


class Worker:
    def __init__(self, mode: str, tree: Path, url: str) -> None:
        scripts = str(WORKER.parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), scripts])}
        self.mode = mode
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), mode, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready = self._read()
        self.memstore = ready["memstore"]
        if not self.memstore.startswith(str(tree)):
            raise SystemExit(f"{mode} imported {self.memstore}, not the tree {tree}")

    def _read(self) -> Any:
        out: IO[str] | None = self.process.stdout
        assert out is not None
        line = out.readline()
        if not line:
            raise SystemExit(f"worker {self.mode} died (exit {self.process.wait()})")
        return json.loads(line)

    def run(self, op: str, calls: int) -> dict[str, Any]:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(f"{op} {calls}\n")
        stdin.flush()
        answer: dict[str, Any] = self._read()
        return answer

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def measure(backend: str, urls: dict[str, str], trees: dict[str, Path], args: Any) -> list[str]:
    workers = {mode: Worker(mode, trees[mode], urls[mode]) for mode in MODES}
    times: dict[tuple[str, str], list[int]] = {(m, o): [] for m in MODES for o in OPS}
    # Per round and op, each side's median: the ratios paired within a round.
    rounds: dict[tuple[str, str], list[float]] = {(m, o): [] for m in MODES for o in OPS}
    spans: dict[str, int] = dict.fromkeys(OPS, 0)
    try:
        for round_ in range(args.rounds + 1):
            order = MODES[round_ % 3 :] + MODES[: round_ % 3]
            for op in OPS:
                for mode in order:
                    answer = workers[mode].run(op, args.calls)
                    if round_ > 0:  # round 0 warms up
                        times[mode, op] += answer["times"]
                        rounds[mode, op].append(statistics.median(answer["times"]))
                        if mode == "on":
                            spans[op] += answer["spans"]
    finally:
        for worker in workers.values():
            worker.stop()
    rows = []
    for op in OPS:
        p50 = {m: statistics.median(times[m, op]) / 1000 for m in MODES}
        p90 = {m: statistics.quantiles(times[m, op], n=10)[-1] / 1000 for m in MODES}
        per_call = spans[op] / len(times["on", op])
        paired = {
            m: statistics.median(
                a / b for a, b in zip(rounds[m, op], rounds["base", op], strict=True)
            )
            for m in ("off", "on")
        }
        rows.append(
            f"| {backend} | {op} | {p50['base']:.0f} | {p50['off']:.0f} | {p50['on']:.0f} | "
            f"{paired['off']:.3f}x | {paired['on']:.3f}x | "
            f"{p90['base']:.0f} | {p90['off']:.0f} | {p90['on']:.0f} | {per_call:.1f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--base", default=None, help="git revision without instrumentation")
    args = parser.parse_args()
    base_rev = args.base or _git("merge-base", "HEAD", "main")
    head = _git("rev-parse", "--short", "HEAD")
    dirty = " + local edits" if _git("status", "--porcelain", "memstore") else ""
    load_start = os.getloadavg()
    scratch = Path(tempfile.mkdtemp(prefix="memstore-bench-otel-"))
    base_tree = scratch / "base"
    _git("worktree", "add", "--detach", str(base_tree), base_rev)
    databases = Databases(str(scratch / "db"))
    rows: list[str] = []
    try:
        trees = {"base": base_tree, "off": ROOT, "on": ROOT}
        backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
        for backend in backends:
            if backend == "sqlite":
                urls = {m: databases.sqlite_url(m) for m in MODES}
            else:
                urls = {m: sqlalchemy_url(databases.pg_dsn(f"otel_{m}")) for m in MODES}
            rows += measure(backend, urls, trees, args)
    finally:
        databases.close()
        _git("worktree", "remove", "--force", str(base_tree))
        shutil.rmtree(scratch, ignore_errors=True)
    load_end = os.getloadavg()
    print(f"command: python scripts/bench_otel.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"memstore: git {head}{dirty}; base (no instrumentation): git {base_rev[:7]}")
    print(f"load average: {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end")
    print(f"rounds {args.rounds} x {args.calls} calls per operation and side (after a warm-up)")
    print()
    print(
        "| backend | call | base p50 µs | off p50 µs | on p50 µs | off / base | on / base "
        "| base p90 µs | off p90 µs | on p90 µs | spans per call (on) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
