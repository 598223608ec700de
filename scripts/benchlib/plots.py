"""SVG figures of one run's measurements (``bench.py --plot DIR``), drawn with matplotlib.

Each figure is drawn only from the rows its scenario added in this run, so a plot
never shows a number the run did not measure. matplotlib (the docs extra) is
imported when a figure is drawn, never by the benchmarks themselves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .stats import Section

__all__ = ["INGEST_SVG", "RECALL_SVG", "plot_run"]

RECALL_SVG = "recall-vs-raw-by-tenant-size.svg"
INGEST_SVG = "ingest-vs-copy.svg"

# memstore path -> the hand-written baseline its "p50 vs raw" cell compares with.
_RECALL_PATHS = {
    "memstore recall (hybrid)": "hybrid vs raw hybrid SQL (RRF)",
    "memstore vector-only": "vector-only vs raw exact vector SQL",
}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "memstore"  # stable ids: re-running changes no byte needlessly
    return plt


def _number(cell: object) -> float:
    """ "1,234" / "0.34x" / "70%" as the number the report printed."""
    return float(str(cell).replace(",", "").rstrip("x%"))


def _tenant_rows(tenant: str) -> float:
    """ "10,000-row tenant (9,888 rows)" -> 9888; a range "(345-453 rows)" -> its middle."""
    found = re.search(r"\(([\d,]+)(?:-([\d,]+))? rows\)", tenant)
    if found is None:
        raise ValueError(f"no row count in tenant label {tenant!r}")
    low = _number(found.group(1))
    return (low + _number(found.group(2))) / 2 if found.group(2) else low


def _recall_figure(section: Section, path: Path) -> bool:
    # (backend, path) -> [(tenant rows, memstore p50 / raw p50)]
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for row in section.rows:
        cells = row.cells
        if cells.get("path") not in _RECALL_PATHS or not cells.get("p50 vs raw"):
            continue
        backend = str(cells["store"]).split()[0]
        point = (_tenant_rows(str(cells["tenant"])), _number(cells["p50 vs raw"]))
        series.setdefault((backend, str(cells["path"])), []).append(point)
    if not series:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for (backend, name), points in sorted(series.items()):
        points.sort()
        style = "-" if backend == "postgres" else "--"
        marker = "o" if "hybrid" in name else "s"
        ax.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            style,
            marker=marker,
            label=f"{backend}: {_RECALL_PATHS[name]}",
        )
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("episodes of the tenant queried (log scale)")
    ax.set_ylabel("p50 latency, memstore / hand-written SQL")
    ax.set_title("Top-10 recall: memstore vs hand-written SQL, by tenant size")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return True


def _ingest_figure(section: Section, path: Path) -> bool:
    labels: list[str] = []
    rates: dict[str, list[float]] = {"memstore": [], "raw": []}
    raw_names: set[str] = set()
    for row in section.rows:
        cells = row.cells
        name = str(cells.get("path", ""))
        if name == "memstore remember_many":
            labels.append(f"{cells['backend']}\n{cells['table']}".replace(", ", "\n"))
            rates["memstore"].append(_number(cells["rows/s"]))
        elif name in ("asyncpg COPY", "sqlite3 executemany"):
            rates["raw"].append(_number(cells["rows/s"]))
            raw_names.add(name)
    if not labels or len(rates["raw"]) != len(labels):
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(labels)), 4))
    xs = list(range(len(labels)))
    width = 0.38
    ax.bar([x - width / 2 for x in xs], rates["memstore"], width, label="memstore remember_many")
    ax.bar(
        [x + width / 2 for x in xs],
        rates["raw"],
        width,
        label=" / ".join(sorted(raw_names)) + " (same rows)",
    )
    for x, mem, raw in zip(xs, rates["memstore"], rates["raw"], strict=True):
        ax.annotate(f"{mem / raw:.0%}", (x - width / 2, mem), ha="center", va="bottom", size=8)
    ax.set_xticks(xs, labels, fontsize=8)
    ax.set_ylabel("rows per second (batches of 1,000)")
    ax.set_title("Ingest: memstore vs COPY / executemany (label: memstore's share)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return True


def plot_run(sections: Sequence[Section], directory: str) -> list[Path]:
    """Draw the figures this run's sections can give; returns the files written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for section in sections:
        number = section.title.split(".")[0]
        if number == "1" and _ingest_figure(section, out / INGEST_SVG):
            written.append(out / INGEST_SVG)
        elif number == "2" and _recall_figure(section, out / RECALL_SVG):
            written.append(out / RECALL_SVG)
    return written
