"""Atomic slot and change numbering across OS processes: 4 processes x 200 appends to one thread."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstore import MemoryStore

PROCESSES = 4
APPENDS = 200

# Each worker opens its own MemoryStore (own engine, own connections), says it
# is ready, waits for the common start signal so all of them append at once,
# then prints the slot indices it was given.
WORKER = r"""
import asyncio, json, sys, time
from pathlib import Path
from memstore import MemoryStore

url, thread_id, signals = sys.argv[1], sys.argv[2], Path(sys.argv[5])
worker, appends = int(sys.argv[3]), int(sys.argv[4])

async def main():
    async with MemoryStore.open(url) as store:
        await store.threads.thread_exists(thread_id, user_id="alice")  # connect before the start
        (signals / f"ready-{worker}").touch()
        while not (signals / "go").exists():
            await asyncio.sleep(0.005)
        got = []
        for n in range(appends):
            slot = await store.threads.append(
                thread_id, {"worker": worker, "n": n}, from_id=f"w{worker}", to_id="sink",
                user_id="alice",
            )
            got.append(slot.index)
    print(json.dumps(got))

asyncio.run(main())
"""

pytestmark = pytest.mark.slow


def _run_workers(db_url: str, signals: Path) -> list[list[int]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, db_url, "busy", str(k), str(APPENDS), str(signals)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(PROCESSES)
    ]
    try:
        # Wait (bounded, as a safety net only) until every worker is connected.
        deadline = time.monotonic() + 120
        while len(list(signals.glob("ready-*"))) < PROCESSES:
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        (signals / "go").touch()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            results.append(json.loads(out))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


async def test_four_processes_append_without_gaps_or_duplicates(
    db_url: str, tmp_path: Path
) -> None:
    # Blocking on the subprocesses is the point here; the event loop has nothing else to do.
    per_worker = _run_workers(db_url, tmp_path)

    total = PROCESSES * APPENDS
    returned = sorted(i for got in per_worker for i in got)
    assert returned == list(range(total))  # every index handed out exactly once
    for got in per_worker:
        assert got == sorted(got)  # a worker's own appends keep their order

    async with MemoryStore.open(db_url) as store:
        slots = await store.threads.get_thread("busy", user_id="alice")
        assert [s.index for s in slots] == list(range(total))
        assert await store.threads.length("busy", user_id="alice") == total
        # The slot each worker was told it got holds that worker's payload.
        for worker, got in enumerate(per_worker):
            assert [slots[i].payload for i in got] == [
                {"worker": worker, "n": n} for n in range(APPENDS)
            ]
        # One change per append, numbered 1..total in commit order, naming its slot:
        # the slot's counter and the tenant's change counter advanced together.
        feed = store.changes(user_id="alice", after="")
        changes = [await anext(feed) for _ in range(total)]
        await feed.aclose()
        assert [int(c.position.split(":")[1]) for c in changes] == list(range(1, total + 1))
        assert [(c.key, c.slot_index) for c in changes] == [("busy", i) for i in range(total)]
        interleaved = sum(
            slots[i].payload["worker"] != slots[i - 1].payload["worker"] for i in range(1, total)
        )
        # Not an assertion on timing: just report how much the workers overlapped.
        print(f"{store.backend}: {interleaved} worker switches in {total} slots")
