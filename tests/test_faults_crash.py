"""A writer process SIGKILLed mid-transaction leaves no partial rows (both backends)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Episode, Fact, MemoryStore
from tests.conftest import table_counts
from tests.store_parts import own_engine

pytestmark = pytest.mark.slow
WORKER = Path(__file__).with_name("fault_worker.py")
# Guards against a stuck worker hanging CI; never reached when things behave.
HANG_GUARD_S = 120


class Worker:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.PIPE,
            text=True,
        )

    def wait_for(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError(f"worker exited before {prefix!r}: {self.proc.stderr.read()}")  # type: ignore[union-attr]

    async def expect(self, prefix: str) -> str:
        """The next line starting with ``prefix`` (fails rather than hangs)."""
        async with asyncio.timeout(HANG_GUARD_S):
            return await asyncio.to_thread(self.wait_for, prefix)

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(timeout=30) == -signal.SIGKILL


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.proc.poll() is None:
            worker.kill()


async def assert_inside_a_transaction(url: str) -> None:
    """Prove the worker is frozen with its transaction open (not before or after it)."""
    if url.startswith("postgresql"):
        async with own_engine(url) as engine, engine.connect() as conn:
            states = (
                await conn.execute(
                    text(
                        "SELECT state FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                    )
                )
            ).scalars()
            assert "idle in transaction" in list(states)
    else:
        path = make_url(url).database
        probe = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                probe.execute("BEGIN IMMEDIATE")  # the worker holds the write lock
        finally:
            probe.close()


async def test_killed_bulk_insert_leaves_nothing(
    store: MemoryStore, db_url: str, workers: list[Worker]
) -> None:
    await store.remember(Episode(user_id="alice", session_id="before", input="kept"))
    before = await table_counts(db_url)
    worker = Worker("pause-batch", db_url, "3000")
    workers.append(worker)
    await worker.expect("PAUSED")
    await assert_inside_a_transaction(db_url)
    worker.kill()

    assert await table_counts(db_url) == before
    assert await store.session_messages("big", user_id="alice") == []
    # The lock died with the process: writing works at once.
    await store.remember(Episode(user_id="alice", session_id="after", input="ok"))


async def test_killed_fact_correction_leaves_the_old_belief(
    store: MemoryStore, db_url: str, workers: list[Worker]
) -> None:
    await store.add_fact(
        Fact(user_id="alice", subject="alice", predicate="lives_in", object="Paris")
    )
    history = await store.fact_history(user_id="alice")
    worker = Worker("pause-fact", db_url)
    workers.append(worker)
    await worker.expect("PAUSED")
    await assert_inside_a_transaction(db_url)
    worker.kill()

    # The supersede UPDATE and the first INSERT were in flight: neither survives.
    assert await store.fact_history(user_id="alice") == history
    # And the (subject, predicate) is not stuck behind a dead lock.
    outcome = await store.assert_fact(
        Fact(user_id="alice", subject="alice", predicate="lives_in", object="Berlin")
    )
    assert outcome.change == "superseded"


async def test_kill_at_an_arbitrary_point_of_a_write_stream(
    engine: AsyncEngine, store: MemoryStore, db_url: str, workers: list[Worker]
) -> None:
    worker = Worker("stream", db_url)
    workers.append(worker)
    last = 0
    for _ in range(12):  # kill somewhere after the 12th acknowledgement
        last = int((await worker.expect("ACK")).split()[1])
    worker.kill()

    counts: dict[str, int] = {}
    async with engine.connect() as conn:
        for session_id, n in await conn.execute(
            text("SELECT session_id, count(*) FROM episodes GROUP BY session_id")
        ):
            counts[session_id] = n
    # Every acknowledged batch complete, every batch all-or-nothing.
    assert all(counts.get(f"b{i}") == 20 for i in range(last + 1))
    assert set(counts.values()) == {20}
    # One current open-ended residence; history is a chain of versions.
    current = await store.recall_facts("lives", user_id="alice", limit=100)
    assert len(current) == 1
    # The block's content, version and history agree with each other.
    (block,) = await store.working(user_id="alice")
    history = await store.block_history("log", user_id="alice")
    assert [v.version for v in history] == list(range(1, block.version + 1))
    assert history[-1].content == block.content
    assert block.content == "".join(f"[{i}]" for i in range(block.version))
    assert block.version >= last + 1
