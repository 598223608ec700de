#!/usr/bin/env python
"""memstore benchmarks: every figure next to a baseline measured in the same run.

    python scripts/bench.py --quick                      # < 2 minutes, smoke sizes
    python scripts/bench.py                              # full run -> docs/BENCHMARKS.md
    python scripts/bench.py --scenario ingest,recall --recall-rows-pg 200000
    python scripts/bench.py --quick --scenario ingest,recall --plot docs/img   # + SVG figures

Starts its own databases (SQLite files and a pgserver PostgreSQL + pgvector, all in a
temp dir). Needs the bench extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
import time
import traceback
import warnings
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")

from benchlib.context import Context  # noqa: E402
from benchlib.memapi import feature_flags  # noqa: E402
from benchlib.report import load_run, render, run_record, save_run  # noqa: E402
from benchlib.servers import Databases, machine_info  # noqa: E402
from benchlib.stats import Section  # noqa: E402

SCENARIOS = {
    "ingest": "benchlib.scen_ingest",
    "recall": "benchlib.scen_recall",
    "large": "benchlib.scen_large",
    "temporal": "benchlib.scen_temporal",
    "consolidate": "benchlib.scen_consolidate",
    "peer": "benchlib.scen_peer",
    "memory": "benchlib.scen_memory",
}

# name: (full size, quick size, help)
SIZES = {
    "ingest_rows": (100_000, 3_000, "episodes ingested per path and backend"),
    "ingest_rows_pg": (
        10_000,
        1_000,
        "episodes ingested per path into Postgres with the "
        "HNSW index (incremental HNSW inserts are slow)",
    ),
    "ingest_tenants": (100, 10, "tenants in the ingest workload"),
    "recall_rows_pg": (
        200_000,
        6_000,
        "episodes in the Postgres recall store (one 10,000-row tenant, one of 1,000, "
        "the rest of about 400; smaller in --quick)",
    ),
    "recall_rows_sqlite": (100_000, 6_000, "episodes in the SQLite recall store (as above)"),
    "queries": (200, 20, "timed queries per path"),
    "large_facts": (200_000, 5_000, "episodes and facts of the single large tenant (Postgres)"),
    "large_queries": (60, 10, "timed queries per path on the large tenant (exact scans are slow)"),
    "temporal_versions": (1_000_000, 10_000, "fact versions in the bi-temporal store"),
    "consolidate_episodes": (5_000, 200, "episodes per consolidation run"),
    "peer_rows": (
        20_000,
        2_000,
        "episodes in the memstore vs LangGraph comparison (both "
        "ingest through an HNSW index, a few hundred rows/s here)",
    ),
    "peer_tenants": (100, 10, "tenants in the peer comparison"),
    "memory_rows": (100_000, 5_000, "episodes of the tenant ingested/exported for peak memory"),
}


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--scenario",
        default=",".join(SCENARIOS),
        help=f"comma-separated subset of: {', '.join(SCENARIOS)}",
    )
    p.add_argument("--quick", action="store_true", help="small sizes; finishes in < 2 min")
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument(
        "--output", help="markdown file to write (default docs/BENCHMARKS.md, none with --quick)"
    )
    p.add_argument("--workdir", help="where databases go (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    p.add_argument(
        "--notes", metavar="FILE.md", help="hand-written analysis appended under its own heading"
    )
    p.add_argument(
        "--plot",
        metavar="DIR",
        help="also draw this run's ingest and recall figures as SVG files in DIR "
        "(needs matplotlib: the docs extra)",
    )
    p.add_argument(
        "--combine",
        nargs="+",
        metavar="RUN.json",
        help="render saved runs (the .json written next to --output) into one "
        "document instead of running anything",
    )
    for name, (_full, _quick, text) in SIZES.items():
        p.add_argument("--" + name.replace("_", "-"), type=int, default=None, help=text)
    args = p.parse_args(argv)
    for name, (full, quick, _text) in SIZES.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.plot and args.combine:
        p.error("--plot draws the figures of the run it measures, not of saved runs")
    unknown = set(args.scenario.split(",")) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    return args


def log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def write(text: str, output: str | None, notes: str | None = None) -> None:
    from benchlib.baselines import baseline_lines

    text += "\n" + "\n".join(baseline_lines())
    if notes:
        text += "\n## Analysis (written after the run)\n\n" + Path(notes).read_text().strip() + "\n"
    print(text)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text)
        log(f"wrote {output}")


def main(argv: list[str]) -> int:
    args = parse(argv)
    from benchlib.issuerows import issue_lines
    from benchlib.summary import intro, summary

    if args.combine:
        runs = [load_run(p) for p in args.combine]
        how = [
            (
                f"This document combines {len(runs)} runs (data in the `.json` files named below)"
                if len(runs) > 1
                else "This document renders one run (its data is the `.json` file named below)"
            )
            + f", rendered with `python scripts/bench.py {shlex.join(argv)}`."
        ]
        write(
            render(
                runs,
                intro=[*intro(any(r["quick"] for r in runs)), "", *how],
                summary=issue_lines([s for r in runs for s in r["sections"]]),
            ),
            args.output or "docs/BENCHMARKS.md",
            args.notes,
        )
        return 0
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    dbs = Databases(args.workdir, keep=args.keep)
    ctx = Context(
        args=args, dbs=dbs, features=feature_flags(), backends=args.backends.split(","), log=log
    )
    sections: list[Section] = []
    failed = False
    try:
        machine = machine_info()
        if "postgres" in ctx.backends:
            import asyncio

            machine.update(asyncio.run(dbs.pg_versions()))
        for name in args.scenario.split(","):
            log(f"scenario {name}")
            start = time.perf_counter()
            try:
                section = importlib.import_module(SCENARIOS[name]).run(ctx)
            except Exception as exc:  # a failed scenario is reported, not hidden
                failed = True
                traceback.print_exc()
                section = Section(f"{name} (FAILED)")
                section.note(f"FAILED: {type(exc).__name__}: {exc}")
            section.seconds = time.perf_counter() - start
            log(f"scenario {name} done in {section.seconds:.0f} s")
            sections.append(section)
    finally:
        dbs.close()
    command = "python scripts/bench.py" + ("" if not argv else " " + shlex.join(argv))
    if os.environ.get("PYTHONPATH"):  # measuring another memstore checkout: say which
        command = f"PYTHONPATH={os.environ['PYTHONPATH']} {command}"
    record = run_record(
        command=command,
        started=f"{started:%Y-%m-%d %H:%M}",
        total_seconds=time.perf_counter() - t0,
        machine=machine,
        features=ctx.features,
        sizes={k: getattr(args, k) for k in SIZES},
        sections=sections,
        quick=args.quick,
    )
    output = args.output or (None if args.quick else "docs/BENCHMARKS.md")
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        save_run(record, str(Path(output).with_suffix(".json")))
    issue = issue_lines(sections)
    write(
        render(
            [{**record, "sections": sections}],
            intro=intro(args.quick),
            summary=[*summary(sections), "", *issue],
        ),
        output,
        args.notes,
    )
    # The run's answer, row by row, last on the terminal (the document has it too).
    print("\n".join(issue), flush=True)
    if args.plot:
        from benchlib.plots import plot_run

        for path in plot_run(sections, args.plot):
            log(f"wrote {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
