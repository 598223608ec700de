"""Exactly-once across OS processes: three concurrent consolidators, and a SIGKILL mid-batch."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from consolidation_helpers import (
    consolidation_marks,
    current_facts,
    reset_consolidation,
    user_episodes,
)
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import MemoryStore
from memstore.models import EpisodeConsolidationRow, FactRow
from tests.conftest import is_postgres
from tests.store_parts import own_engine

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
USERS = ["ann", "ben", "cat", "dan", "eve", "fay"]


def _worker(url: str, *args: str, stderr: int | None = subprocess.PIPE) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "memstore", "consolidate", "--url", url, *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _processed(summary: str) -> int:
    match = re.search(r"^consolidated (\d+) episodes", summary, re.MULTILINE)
    assert match, summary
    return int(match.group(1))


async def _uninterrupted(store: MemoryStore, url: str, batch_size: int) -> list[tuple[object, ...]]:
    await reset_consolidation(url)
    result = await store.consolidate_all_tenants(batch_size=batch_size)
    assert result.processed == len(await _episode_ids(url))
    return await current_facts(url)


async def _episode_ids(url: str) -> set[str]:
    from memstore.models import EpisodeRow

    async with own_engine(url) as engine, engine.connect() as conn:
        return set((await conn.execute(select(EpisodeRow.id))).scalars().all())


async def test_three_processes_consolidate_each_episode_exactly_once(
    store: MemoryStore, db_url: str
) -> None:
    episodes = [e for user in USERS for e in user_episodes(user, 100)]
    await store.remember_many(episodes)
    assert len(episodes) == 600

    # A little pause per episode while extracting (outside any write lock) so the
    # three runs overlap despite process start-up.
    workers = [
        _worker(db_url, "--batch-size", "25", "--debug-extract-delay", "0.005") for _ in range(3)
    ]
    outputs = [w.communicate(timeout=300) for w in workers]
    for worker, (_out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    # The workers' own counts add up to 600: no episode was processed twice.
    assert sum(_processed(out) for out, _err in outputs) == 600
    marks = await consolidation_marks(db_url)
    assert len(marks) == 600 and set(marks.values()) == {1}

    concurrent = await current_facts(db_url)
    statements = [row[:6] for row in concurrent]
    assert len(statements) == len(set(statements)), "duplicate current facts"
    assert concurrent == await _uninterrupted(store, db_url, 25)


async def test_sigkill_mid_batch_then_rerun_equals_uninterrupted_run(
    engine: AsyncEngine, store: MemoryStore, db_url: str, backend: str
) -> None:
    episodes = [e for user in USERS[:2] for e in user_episodes(user, 80)]
    await store.remember_many(episodes)
    lease = 2.0
    worker = _worker(
        db_url, "--batch-size", "20", "--lease-seconds", str(lease), "--debug-write-delay", "0.05"
    )
    assert worker.stderr is not None
    seen = ""
    while "batch user=" not in seen:  # a batch line is printed after each commit
        line = worker.stderr.readline()
        if not line:
            worker.kill()
            pytest.fail(f"worker did not commit a batch: {seen}{worker.stderr.read()}")
        seen += line
    claimed_at = time.monotonic()
    # The next batch writes ~30 facts at 50 ms each: this lands inside it.
    await asyncio.sleep(0.5)
    if is_postgres(backend):
        # The worker's write transaction is open (it pauses between fact writes).
        async with engine.connect() as conn:
            open_batches = await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                )
            )
        assert open_batches == 1
    worker.send_signal(signal.SIGKILL)
    worker.communicate(timeout=60)
    assert worker.returncode == -signal.SIGKILL

    marks = await consolidation_marks(db_url)
    assert 0 < len(marks) < len(episodes), "the kill must land mid-run"
    # The dead worker still holds the lease of the batch it was writing.
    async with engine.connect() as conn:
        leased = await conn.scalar(
            select(func.count())
            .select_from(EpisodeConsolidationRow)
            .where(
                EpisodeConsolidationRow.claimed_by.is_not(None),
                EpisodeConsolidationRow.consolidated_at.is_(None),
            )
        )
    assert leased == 20
    assert len(marks) % 20 == 0, "only whole batches are ever committed"
    async with engine.connect() as conn:
        sources = (await conn.execute(select(FactRow.sources))).scalars().all()
    # Nothing half-written: every fact comes from an episode marked consolidated.
    assert {s for row in sources for s in row} <= set(marks)

    # The dead worker's lease must run out before its episodes are claimed again.
    await asyncio.sleep(max(0.0, lease + 0.1 - (time.monotonic() - claimed_at)))
    rerun = 0
    for _ in range(100):  # Postgres may take a moment to notice the dead connection
        rerun += (await store.consolidate_all_tenants(batch_size=20)).processed
        if rerun + len(marks) == len(episodes):
            break
        await asyncio.sleep(0.1)
    assert rerun + len(marks) == len(episodes)
    after = await consolidation_marks(db_url)
    assert len(after) == len(episodes) and set(after.values()) == {1}

    recovered = await current_facts(db_url)
    assert recovered == await _uninterrupted(store, db_url, 20)
