"""The per-call rows of the "every call within 1.3x its hand-written statement" table.

One line per row, backend and tenant size: this run's p50 ratio of memstore to the
hand-written baseline it was paired with, the row's target, met or not. Read from
the scenarios' target verdicts (kept in the saved JSON), so ``--combine`` renders
the same lines from saved runs. The rows measured by other scripts are named with
the script that prints them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .stats import Section

__all__ = ["issue_lines"]

_BACKENDS = ("postgres", "sqlite")
_RECALL = re.compile(
    r"^recall (?P<backend>\w+) (?P<cls>(?P<rows>[\d,]+)-row tenants?), (?P<path>memstore [^:]+): "
    r"p50 <= (?P<limit>[\d.]+)x (?P<base>.+)$"
)
_FACTS = re.compile(
    r"^bi-temporal (?P<backend>\w+) (?P<call>.+?) \((?P<label>[^()]+)\): "
    r"(?:p50 <= (?P<limit>[\d.]+)x (?P<base>.+)|same version ids in the same order as .+)$"
)
_CHAINS = "19-version chains"

# Rows this script does not measure, and the script that prints each.
ELSEWHERE = (
    ("`threads.append`, sequential", "scripts/bench_live.py"),
    ("`threads.wait` wake-up, SQLite and Postgres", "scripts/bench_live.py"),
    ("turn loop (context + remember + append), N = 1, 16, 64", "scripts/bench_turn_loop.py"),
    ("recall on a Citus cluster vs one node", "scripts/bench_citus.py"),
)


@dataclass(frozen=True)
class _Line:
    row: str
    backend: str
    at: str
    measured: str
    target: str
    met: bool | str | None


def _recall_lines(targets: Sequence[tuple[str, str, bool | str | None]]) -> list[_Line]:
    found: dict[tuple[str, str], list[tuple[int, _Line]]] = {}
    for name, measured, met in targets:
        m = _RECALL.match(name)
        if not m:
            continue
        row = "recall (hybrid)" if "hybrid" in m["path"] else "recall vector-only"
        rows = int(m["rows"].replace(",", ""))
        line = _Line(
            row,
            m["backend"],
            m["cls"],
            f"{measured} {m['base']}",
            f"<= {m['limit']}x",
            met,
        )
        found.setdefault((row, m["backend"]), []).append((rows, line))
    out = []
    for row in ("recall (hybrid)", "recall vector-only"):
        for backend in _BACKENDS:
            out += [line for _, line in sorted(found.get((row, backend), []))]
    return out


def _fact_lines(targets: Sequence[tuple[str, str, bool | str | None]]) -> list[_Line]:
    calls = {
        "facts (as-of)": "`store.facts` as-of",
        "fact_history": "`fact_history`",
        "recall_facts": "`recall_facts`",
    }
    ratios: dict[tuple[str, str], _Line] = {}
    guards: dict[tuple[str, str], tuple[str, bool | str | None]] = {}
    for name, measured, met in targets:
        m = _FACTS.match(name)
        if not m or m["label"] != _CHAINS or m["call"] not in calls:
            continue
        key = (m["call"], m["backend"])
        if m["limit"] is None:
            guards[key] = (measured, met)
            continue
        ratios[key] = _Line(
            calls[m["call"]],
            m["backend"],
            _CHAINS,
            f"{measured} {m['base']}",
            f"<= {m['limit']}x",
            met,
        )
    out = []
    for call in calls:
        for backend in _BACKENDS:
            line = ratios.get((call, backend))
            if line is None:
                continue
            guard = guards.get((call, backend))
            if guard is not None and guard[1] is not True:
                # A baseline that ranks differently is not this call's baseline.
                line = _Line(
                    line.row,
                    line.backend,
                    line.at,
                    f"{line.measured} (results differ: {guard[0]} the same)",
                    line.target,
                    "no verdict: results differ",
                )
            out.append(line)
    return out


def _verdict(met: bool | str | None) -> str:
    if isinstance(met, str):
        return met
    return {True: "met", False: "**NOT met**", None: "reported"}[met]


def issue_lines(sections: Sequence[Section]) -> list[str]:
    """Markdown: the per-call rows of the issue table measured in these sections."""
    targets = [t for s in sections for t in s.targets]
    lines = _recall_lines(targets) + _fact_lines(targets)
    out = [
        "### Issue table: per-call rows, memstore / its hand-written baseline (p50, same run)",
        "",
        "| row | backend | at | memstore / baseline | target | verdict |",
        "|---|---|---|---|---|---|",
    ]
    out += [
        f"| {x.row} | {x.backend} | {x.at} | {x.measured} | {x.target} | {_verdict(x.met)} |"
        for x in lines
    ]
    if not lines:
        out.append("| (none: run the recall and temporal scenarios) | | | | | |")
    out += ["", "Rows measured by other scripts:", ""]
    out += [f"- {row}: `{script}`" for row, script in ELSEWHERE]
    return out
