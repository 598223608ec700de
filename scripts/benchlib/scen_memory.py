"""Scenario 7: peak memory (child ru_maxrss) of ingesting and exporting one big tenant.

Export is measured at two tenant sizes (N/10 and N): memory that grows with the
tenant (about 10x) means the export holds everything at once; a flat peak means
it streams.
"""

from __future__ import annotations

import asyncio

from .context import Context, run_child
from .ingest_util import drop_hnsw
from .stats import Section

__all__ = ["run"]

USER = "bigtenant"


def run(ctx: Context) -> Section:
    n = ctx.args.memory_rows
    section = Section(f"7. Peak memory: ingest and export of a {n:,}-episode tenant")
    section.note(
        "Each measurement runs in a fresh child process; `start` is its RSS after "
        "imports and opening the store, where the high-water mark is reset "
        "(/proc/self/clear_refs), and `peak` is the high-water mark (VmHWM) at the "
        "end of the operation, so `peak - start` is what the operation added. The "
        "baseline is the size of the data itself (the export file written afterwards)."
    )
    from memstore import MemoryStore

    streams = hasattr(MemoryStore, "export_stream")
    for backend in ctx.backends:
        sizes = sorted({max(1_000, n // 10), n})
        for rows in sizes:
            target = ctx.fresh(backend, f"mem{rows}")
            if backend == "postgres":
                # Memory, not speed, is measured here: skip slow incremental HNSW inserts.
                asyncio.run(drop_hnsw(target))
            ctx.log(f"  memory {backend}: ingest {rows:,} in a child")
            ing = run_child("ingest", target.url, str(rows), USER)
            section.add(
                backend=backend,
                operation="remember_many x1,000",
                rows=f"{rows:,}",
                **{
                    "start MB": f"{ing['rss_start_mb']:.0f}",
                    "peak MB": f"{ing['peak_mb']:.0f}",
                    "peak - start MB": f"{ing['peak_mb'] - ing['rss_start_mb']:.0f}",
                    "data MB": "",
                    "seconds": f"{ing['seconds']:.0f}",
                },
            )
            modes = ["export"] + (["stream"] if streams else [])
            for mode in modes:
                out = str(ctx.dbs.root / f"export-{backend}-{rows}-{mode}.json")
                ctx.log(f"  memory {backend}: {mode} {rows:,} in a child")
                exp = run_child("export", target.url, USER, mode, out)
                label = "export() -> dict" if mode == "export" else "export_stream() -> JSONL"
                section.add(
                    backend=backend,
                    operation=label,
                    rows=f"{exp['rows']:,}",
                    **{
                        "start MB": f"{exp['rss_start_mb']:.0f}",
                        "peak MB": f"{exp['peak_mb']:.0f}",
                        "peak - start MB": f"{exp['peak_mb'] - exp['rss_start_mb']:.0f}",
                        "data MB": f"{exp['bytes'] / 2**20:.1f}",
                        "seconds": f"{exp['seconds']:.0f}",
                    },
                )
    _verdicts(section, streams)
    return section


def _verdicts(section: Section, streams: bool) -> None:
    """An operation streams if its peak grows by well under the data it handles."""
    by_key: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for row in section.rows:
        c = row.cells
        by_key.setdefault((c["backend"], c["operation"]), []).append(
            (int(c["rows"].replace(",", "")), float(c["peak - start MB"]), float(c["data MB"] or 0))
        )
    for (backend, op), points in by_key.items():
        if len(points) < 2:
            continue
        (n1, m1, d1), (n2, m2, d2) = sorted(points)[0], sorted(points)[-1]
        grew = m2 - m1
        # Streaming: the extra peak stays a small fraction of the extra data (or of
        # ~1 KB/row when there is no file to compare with), plus allocator noise.
        allowance = 0.2 * max(d2 - d1, (n2 - n1) / 1000) + 20
        flat = grew <= allowance
        verdict = "stays flat (streams)" if flat else "grows with the tenant (holds it all)"
        section.note(
            f"{backend} {op}: +{m1:.0f} MB at {n1:,} rows -> +{m2:.0f} MB at "
            f"{n2:,} rows (data {d1:.1f} -> {d2:.1f} MB): {verdict}."
        )
        if op.startswith("export_stream" if streams else "export"):
            section.target(
                f"memory {backend}: {op} streams (peak does not grow with the tenant)",
                f"+{m2:.0f} MB peak for {d2:.1f} MB of data",
                flat,
            )
    if not streams:
        section.note("This memstore build has no export_stream(); only export() was measured.")
