"""Render a run as markdown: command, machine, per-scenario tables, targets, timings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .stats import Section

__all__ = ["render"]


def _table(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        out.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    return out


def _verdict(met: bool | str | None) -> str:
    if isinstance(met, str):
        return met
    return {True: "met", False: "**NOT met**", None: "reported (no numeric target)"}[met]


def render(*, command: str, machine: dict[str, str], started: str, total_seconds: float,
           sections: Sequence[Section], sizes: dict[str, Any], features: dict[str, bool],
           intro: Sequence[str] = (), summary: Sequence[str] = ()) -> str:
    lines = ["# memstore benchmarks", ""]
    lines += list(intro)
    lines += ["", "## Run", "", f"- Command: `{command}`", f"- Started: {started} UTC",
              f"- Total wall time: {total_seconds / 60:.1f} min"]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["- memstore features present: "
              + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in features.items())]
    lines += ["- Sizes: " + ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}"
                                      for k, v in sizes.items())]
    lines += ["", "### Time per part", ""]
    lines += _table(["scenario", "wall time"],
                    [{"scenario": s.title, "wall time": f"{s.seconds:.0f} s"} for s in sections])
    targets = [(s.title, *t) for s in sections for t in s.targets]
    if targets:
        lines += ["", "## Targets", ""]
        lines += _table(["target", "measured", "verdict"],
                        [{"target": name, "measured": measured, "verdict": _verdict(met)}
                         for _, name, measured, met in targets])
    for s in sections:
        lines += ["", f"## {s.title}", ""]
        if s.rows:
            lines += _table(s.columns, [r.cells for r in s.rows])
        if s.notes:
            lines += [""] + [f"- {n}" for n in s.notes]
    if summary:
        lines += ["", "## Summary", ""] + list(summary)
    return "\n".join(lines) + "\n"
