"""Render runs as markdown: commands, machine, per-scenario tables, targets, timings.

A run is also saved as JSON next to the markdown, so parts run separately (for
example the long Postgres recall build) can be combined into one document that
still names the exact command of every part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .stats import Row, Section

__all__ = ["load_run", "render", "run_record", "save_run"]


# Which size flags matter to which scenario (by its number in the section title).
SIZE_KEYS = {
    "1": ("ingest_rows", "ingest_rows_pg", "ingest_tenants"),
    "2": (
        "recall_rows_pg",
        "recall_rows_sqlite",
        "queries",
    ),
    "3": ("large_facts", "large_queries"),
    "4": ("temporal_versions", "queries"),
    "5": ("consolidate_episodes",),
    "6": ("peer_rows", "peer_tenants", "queries"),
    "7": ("memory_rows",),
}


def _table(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        out.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    return out


def _verdict(met: bool | str | None) -> str:
    if isinstance(met, str):
        return met
    return {True: "met", False: "**NOT met**", None: "reported (no numeric target)"}[met]


def run_record(
    *,
    command: str,
    started: str,
    total_seconds: float,
    machine: dict[str, str],
    features: dict[str, bool],
    sizes: dict[str, Any],
    sections: Sequence[Section],
    quick: bool,
) -> dict[str, Any]:
    return {
        "command": command,
        "started": started,
        "total_seconds": total_seconds,
        "machine": machine,
        "features": features,
        "sizes": sizes,
        "quick": quick,
        "sections": [
            {
                "title": s.title,
                "columns": s.columns,
                "rows": [r.cells for r in s.rows],
                "targets": s.targets,
                "notes": s.notes,
                "seconds": s.seconds,
            }
            for s in sections
        ],
    }


def save_run(record: dict[str, Any], path: str) -> None:
    Path(path).write_text(json.dumps(record, indent=1, default=str))


def load_run(path: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(Path(path).read_text())
    sections = []
    for s in record["sections"]:
        section = Section(
            s["title"],
            list(s["columns"]),
            [Row(c) for c in s["rows"]],
            [tuple(t) for t in s["targets"]],
            list(s["notes"]),
            s["seconds"],
        )
        sections.append(section)
    record["sections"] = sections
    return record


def render(
    runs: Sequence[dict[str, Any]], *, intro: Sequence[str] = (), summary: Sequence[str] = ()
) -> str:
    lines = ["# memstore benchmarks", ""]
    lines += list(intro)
    machine = {k: v for k, v in runs[0]["machine"].items() if k != "memstore code"}
    lines += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "## Runs", ""]
    for n, run in enumerate(runs, start=1):
        features = ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in run["features"].items())
        used = {s.title.split(".")[0] for s in run["sections"]}
        code = run["machine"].get("memstore code", "unknown")
        lines += [
            f"{n}. `{run['command']}` — started {run['started']} UTC, "
            f"{run['total_seconds'] / 60:.1f} min; memstore {code}; features: {features}"
        ]
        wanted = {k for u in used for k in SIZE_KEYS.get(u, ())}
        sizes = ", ".join(
            f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}"
            for k, v in run["sizes"].items()
            if k in wanted
        )
        lines += [f"   - sizes: {sizes}", f"   - scenarios: {', '.join(sorted(used))}"]
    sections = []
    for n, run in enumerate(runs, start=1):
        for s in run["sections"]:
            if len(runs) > 1:  # the same scenario may appear in several runs
                s = Section(
                    f"{s.title} (run {n})",
                    s.columns,
                    s.rows,
                    [(f"{t[0]} (run {n})", *t[1:]) for t in s.targets],
                    s.notes,
                    s.seconds,
                )
            sections.append(s)
    sections.sort(key=lambda s: s.title)
    lines += ["", "### Time per part", ""]
    lines += _table(
        ["scenario", "wall time"],
        [{"scenario": s.title, "wall time": f"{s.seconds / 60:.1f} min"} for s in sections],
    )
    targets = [t for s in sections for t in s.targets]
    if targets:
        lines += ["", "## Targets", ""]
        lines += _table(
            ["target", "measured", "verdict"],
            [
                {"target": name, "measured": measured, "verdict": _verdict(met)}
                for name, measured, met in targets
            ],
        )
    for s in sections:
        lines += ["", f"## {s.title}", ""]
        if s.rows:
            lines += _table(s.columns, [r.cells for r in s.rows])
        if s.notes:
            lines += [""] + [f"- {n}" for n in s.notes]
    if summary:
        lines += ["", "## Summary", "", *summary]
    return "\n".join(lines) + "\n"
