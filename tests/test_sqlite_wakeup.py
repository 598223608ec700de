"""SQLite waiters learn of other processes' commits from inotify events, or from the poll.

Each test owns a private database file. The separate processes are real Python
processes with a store (or a plain sqlite3 connection) of their own. Where a test
must show which path woke a waiter, the other path is made to wait an hour.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memstore import Slot
from memstore.backends.sqlite import signal as sqlite_signal
from memstore.backends.sqlite.inotify import DatabaseFiles
from memstore.schema.migrate import upgrade
from tests.live_support import GUARD_S, asleep, in_other_process
from tests.store_parts import StoreParts, store_with_parts

pytestmark = [
    pytest.mark.sqlite,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's"),
]

HOUR = 3600.0

CHECKPOINT = r"""
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], timeout=30)
print(connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
connection.close()
"""


def inotify_fds() -> int:
    """Inotify instances this process holds open now."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify"
        except OSError:
            continue  # the listing's own descriptor, closed by now
    return count


def size_of(path: Path) -> int | None:
    """The file's size, None while it does not exist."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def signal_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "memstore-signal" and not t.done()]


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """A private migrated database file (no connection open: no -wal yet) and its path."""
    path = tmp_path / "wake.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade(url)
    yield url, path


@pytest.fixture
def only_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the safety read nor a poll comes within the test: only an event can wake."""
    monkeypatch.setattr(sqlite_signal, "SAFETY_INTERVAL_S", HOUR)
    monkeypatch.setattr(sqlite_signal, "POLL_INTERVAL_S", HOUR)


async def _waiting(
    parts: StoreParts, thread: str, after: int | None = None
) -> asyncio.Task[list[Slot]]:
    """A waiting call that only a wake-up returns within the test (its timeout is an hour)."""
    task = asyncio.create_task(
        parts.store.threads.wait(thread, after=after, user_id="alice", timeout=HOUR)
    )
    await asleep(parts.db)
    return task


async def _woken(waiter: asyncio.Task[list[Slot]]) -> list[int]:
    """The slot indexes ``waiter`` returned once woken."""
    try:
        async with asyncio.timeout(GUARD_S):
            slots = await waiter
    except TimeoutError:
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        raise AssertionError(f"the waiter was not woken within {GUARD_S} s") from None
    return [s.index for s in slots]


async def _checkpoint_in_other_process(path: Path) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHECKPOINT, str(path), stdout=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(GUARD_S):
        out, _ = await proc.communicate()
    assert proc.returncode == 0
    return out.decode().strip()


@pytest.mark.usefixtures("only_events")
async def test_a_commit_in_another_process_wakes_a_waiter_through_file_events(
    database: tuple[str, Path],
) -> None:
    url, _ = database
    before = inotify_fds()
    async with store_with_parts(url) as parts:
        waiter = await _waiting(parts, "t")
        assert inotify_fds() == before + 1
        woken = parts.db.signal.wakeups
        assert await in_other_process(url, "append", "alice", "t") == "0"
        assert await _woken(waiter) == [0]
        assert parts.db.signal.wakeups > woken


@pytest.mark.usefixtures("only_events")
async def test_a_commit_of_another_store_in_this_process_wakes_through_file_events(
    database: tuple[str, Path],
) -> None:
    url, _ = database
    # A second store has its own engine and signal: its commit tells only its own
    # waiters, so the first store hears of it through its connection's data_version,
    # which other connections' commits change, this process's as well.
    async with store_with_parts(url) as parts, store_with_parts(url) as other:
        waiter = await _waiting(parts, "t")
        await other.store.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id="alice")
        assert await _woken(waiter) == [0]


async def test_where_inotify_is_refused_the_poll_still_wakes_a_waiter(
    database: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = database

    def refused(path: str) -> DatabaseFiles:
        raise OSError(errno.ENOSPC, "inotify_add_watch: No space left on device", path)

    monkeypatch.setattr(sqlite_signal, "DatabaseFiles", refused)
    monkeypatch.setattr(sqlite_signal, "_told", set())
    monkeypatch.setattr(sqlite_signal, "SAFETY_INTERVAL_S", HOUR)
    before = inotify_fds()
    with caplog.at_level(logging.INFO, logger=sqlite_signal.__name__):
        async with store_with_parts(url) as parts:
            waiter = await _waiting(parts, "t")
            assert inotify_fds() == before
            polls = parts.db.signal.polls
            await in_other_process(url, "append", "alice", "t")
            assert await _woken(waiter) == [0]
            assert parts.db.signal.polls > polls
    told = [r for r in caplog.records if "poll data_version" in r.getMessage()]
    assert len(told) == 1 and told[0].levelno == logging.INFO
    assert "No space left on device" in told[0].getMessage()


@pytest.mark.usefixtures("only_events")
async def test_the_wal_appearing_after_start_and_a_truncating_checkpoint_lose_no_wake_up(
    database: tuple[str, Path],
) -> None:
    url, path = database
    wal = Path(f"{path}-wal")
    async with store_with_parts(url) as parts:
        assert size_of(wal) is None  # the watch starts before any connection made one
        waiter = await _waiting(parts, "t")
        assert size_of(wal) is not None
        await in_other_process(url, "append", "alice", "t")
        assert await _woken(waiter) == [0]
        # Another process checkpoints and empties the -wal; the next commit still wakes.
        waiter = await _waiting(parts, "t", after=0)
        assert await _checkpoint_in_other_process(path) == "0"  # not busy: done
        assert size_of(wal) == 0
        await in_other_process(url, "append", "alice", "t")
        assert await _woken(waiter) == [1]


async def test_commits_no_event_announces_turn_to_the_poll(
    database: tuple[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, _ = database
    # Events of another file only, as on a file system that reports no writes.
    elsewhere = tmp_path / "elsewhere" / "other.db"
    elsewhere.parent.mkdir()
    elsewhere.touch()
    monkeypatch.setattr(sqlite_signal, "DatabaseFiles", lambda _path: DatabaseFiles(str(elsewhere)))
    monkeypatch.setattr(sqlite_signal, "SAFETY_INTERVAL_S", 0.05)
    before = inotify_fds()
    with caplog.at_level(logging.INFO, logger=sqlite_signal.__name__):
        async with store_with_parts(url) as parts:
            waiter = await _waiting(parts, "t")
            assert inotify_fds() == before + 1
            # Each commit is seen by a safety read with no event before it; after
            # a few the watch is closed (a commit per read, or more: keep writing).
            for n in range(10):
                if inotify_fds() == before:
                    break
                await in_other_process(url, "block", "bob", f"silent-{n}")
                await asyncio.sleep(0.2)  # a few safety reads
            assert inotify_fds() == before
            # Polling now (every 30 ms): an append still wakes the waiter.
            monkeypatch.setattr(sqlite_signal, "SAFETY_INTERVAL_S", HOUR)
            await in_other_process(url, "append", "alice", "t")
            assert await _woken(waiter) == [0]
    assert any("no file event announced" in r.getMessage() for r in caplog.records)


async def test_an_idle_waiter_reads_data_version_only_now_and_then(
    database: tuple[str, Path],
) -> None:
    url, _ = database
    async with store_with_parts(url) as parts:
        waiter = await _waiting(parts, "t")
        polls = parts.db.signal.polls
        await asyncio.sleep(2.0)
        # Two safety reads, plus the follow-ups of the -wal's creation at worst;
        # the poll would have read ~66 times.
        reads = parts.db.signal.polls - polls
        assert reads <= 2 + 1 + len(sqlite_signal._FOLLOW_UP_S)  # noqa: SLF001
        assert not waiter.done()
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)


async def test_closing_the_store_leaves_no_inotify_descriptor_and_no_task(
    database: tuple[str, Path],
) -> None:
    url, _ = database
    before = inotify_fds()
    async with store_with_parts(url) as parts:
        waiter = await _waiting(parts, "t")
        assert inotify_fds() == before + 1
        assert len(signal_tasks()) == 1
        assert parts.db.signal.connections == 1
    async with asyncio.timeout(GUARD_S):
        await asyncio.gather(waiter, return_exceptions=True)
    assert inotify_fds() == before
    assert signal_tasks() == []
    assert parts.db.signal.connections == 0
