"""Eight writer processes on one SQLite file: nobody sees "database is locked"."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from memstore import Episode, MemoryStore, Unavailable
from memstore.db.engine import create_engine
from memstore.schema.migrate import upgrade
from tests.test_faults_crash import Worker

pytestmark = [pytest.mark.sqlite, pytest.mark.slow]
WRITERS, ROUNDS = 8, 12


async def test_eight_processes_write_one_file(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    await upgrade(url)
    async with MemoryStore.open(url) as store:
        await store.update_block("log", "", user_id="alice")

    workers = [Worker("contend", url, f"w{n}", str(ROUNDS)) for n in range(WRITERS)]
    try:
        for worker in workers:
            await worker.expect("READY")
        for worker in workers:  # all start writing at once
            assert worker.proc.stdin is not None
            worker.proc.stdin.write("go\n")
            worker.proc.stdin.flush()
        results = [await asyncio.to_thread(w.proc.communicate, timeout=300) for w in workers]
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.kill()

    for worker, (out, err) in zip(workers, results, strict=True):
        assert worker.proc.returncode == 0, err
        assert "DONE" in out
        assert "locked" not in err.lower()

    async with MemoryStore.open(url) as store:
        profile = await store.profile(user_id="alice")
        assert profile.episode_count == WRITERS * ROUNDS
        assert profile.fact_count == WRITERS * ROUNDS
        (block,) = await store.working(user_id="alice")
        assert block.version == 1 + WRITERS * ROUNDS
        for n in range(WRITERS):
            name = f"w{n}"
            inputs = [
                m.content for m in await store.session_messages(name, user_id="alice", limit=100)
            ]
            assert sorted(inputs) == sorted(f"{name}-{i}" for i in range(ROUNDS))
            # Appends from one process land in its order, each exactly once.
            positions = [block.content.index(f"<{name}:{i}>") for i in range(ROUNDS)]
            assert positions == sorted(positions)
            assert all(block.content.count(f"<{name}:{i}>") == 1 for i in range(ROUNDS))


async def test_lock_held_past_the_timeout_is_unavailable_not_a_driver_error(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade(url)
    holder = sqlite3.connect(path, isolation_level=None)
    engine = create_engine(url, sqlite_busy_timeout_ms=200)
    store = MemoryStore(engine=engine)
    try:
        await store.remember(Episode(user_id="alice", session_id="s", input="before"))
        holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction
        with pytest.raises(Unavailable, match="locked"):
            await store.remember(Episode(user_id="alice", session_id="s", input="blocked"))
        with pytest.raises(Unavailable):
            await store.update_block("b", "x", user_id="alice")
        # Readers are not blocked by a writer (WAL).
        assert len(await store.recall("", user_id="alice")) == 1
        holder.execute("ROLLBACK")
        await store.remember(Episode(user_id="alice", session_id="s", input="after"))
        assert len(await store.recall("", user_id="alice")) == 2
    finally:
        holder.close()
        await engine.dispose()
