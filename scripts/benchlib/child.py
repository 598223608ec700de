"""Work done in a child process: consolidation workers and peak-memory probes.

Run as ``python -m benchlib.child COMMAND ...`` with scripts/ on the path; prints
one JSON line. Peak memory is the child's ``ru_maxrss``, so nothing the parent
holds (the workload, other stores) is counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def reset_peak() -> None:
    """Forget the high-water mark so far (Linux >= 4.0: clear_refs 5 resets VmHWM).

    Imports and opening the store can peak above what the measured operation
    needs; without the reset that earlier peak would hide the operation's own.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_mb() -> float:
    """Peak RSS since the last reset (VmHWM), else the process-lifetime ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def consolidate(url: str) -> dict[str, Any]:
    from .memapi import LookupEmbedder, open_store

    async with open_store(url, LookupEmbedder()) as store:
        start = time.time()
        result = await store.consolidate_all_tenants()
        end = time.time()
    return {
        "start": start,
        "end": end,
        "processed": result.processed,
        "added": result.added,
        "reinforced": result.reinforced,
        "superseded": result.superseded,
    }


async def ingest(url: str, n: int, user: str) -> dict[str, Any]:
    from .data import Workload
    from .memapi import LookupEmbedder, open_store
    from .rows import episodes_of

    work = Workload(n, 1, seed=61)
    embedder = LookupEmbedder()
    async with open_store(url, embedder) as store:
        reset_peak()
        base = rss_mb()
        start = time.perf_counter()
        for chunk in work.chunks(1_000):
            await store.remember_many(episodes_of(work, chunk, embedder=embedder, tenant=user))
            embedder.known.clear()
        seconds = time.perf_counter() - start
    return {"rss_start_mb": base, "peak_mb": peak_mb(), "seconds": seconds, "rows": n}


async def export(url: str, user: str, mode: str, out: str) -> dict[str, Any]:
    from .memapi import open_store

    async with open_store(url) as store:
        reset_peak()
        base = rss_mb()
        start = time.perf_counter()
        rows = 0
        if mode == "stream":
            with open(out, "w") as fh:  # noqa: ASYNC230 - a benchmark child, nothing else runs
                fh.write(json.dumps(await store.export_header(user_id=user)) + "\n")
                async for table, row in store.export_stream(user_id=user):
                    fh.write(json.dumps({"table": table, "row": row}) + "\n")
                    rows += 1
            peak = peak_mb()
        else:
            dump = await store.export(user_id=user)
            peak = peak_mb()  # before serialising: the dict itself is what we measure
            rows = sum(len(v) for v in dump["tables"].values())
            with open(out, "w") as fh:  # noqa: ASYNC230
                json.dump(dump, fh)
        seconds = time.perf_counter() - start
    return {
        "rss_start_mb": base,
        "peak_mb": peak,
        "seconds": seconds,
        "rows": rows,
        "bytes": os.path.getsize(out),  # noqa: ASYNC240
    }


def main(argv: list[str]) -> int:
    command, *args = argv
    if command == "consolidate":
        result = asyncio.run(consolidate(args[0]))
    elif command == "ingest":
        result = asyncio.run(ingest(args[0], int(args[1]), args[2]))
    elif command == "export":
        result = asyncio.run(export(args[0], args[1], args[2], args[3]))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
