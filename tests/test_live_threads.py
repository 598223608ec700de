"""threads.wait / follow across processes, on SQLite and Postgres."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import InvalidInput, NotFound, SyncMemoryStore
from memstore.backends.postgresql.signal import LISTENER_APPLICATION_NAME
from memstore.services.thread_watch import MAX_SLOT_INDEX
from tests.live_support import GUARD_S, asleep, in_other_process, settled
from tests.sent_sql import every_statement
from tests.store_parts import StoreParts

pytestmark = pytest.mark.slow


async def test_a_waiter_is_woken_by_an_append_committed_in_another_process(
    parts: StoreParts, db_url: str
) -> None:
    store = parts.store
    waiter = asyncio.create_task(store.threads.wait("t", user_id="alice", timeout=GUARD_S))
    await asleep(parts.db)
    woken = parts.db.signal.wakeups
    assert await in_other_process(db_url, "append", "alice", "t") == "0"
    slots = await waiter
    assert [(s.index, s.payload) for s in slots] == [(0, {"by": "worker"})]
    # Woken by the commit, not found by the last look at the (guard) timeout.
    assert parts.db.signal.wakeups > woken


async def test_a_woken_waiter_holds_its_slot_after_one_statement(
    parts: StoreParts, db_url: str
) -> None:
    store = parts.store
    # alice has a change log, so her waiter sleeps on her hint alone.
    await store.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id="alice")
    waiter = asyncio.create_task(store.threads.wait("t", after=0, user_id="alice", timeout=GUARD_S))
    await asleep(parts.db)
    issued: list[str] = []
    # What the waiter sends once woken, by either path (the appender is another process).
    with every_statement(lambda sql, _params: issued.append(sql)):
        woken = parts.db.signal.wakeups
        await in_other_process(db_url, "append", "alice", "t")
        slots = await waiter
    assert [s.index for s in slots] == [1]
    assert parts.db.signal.wakeups > woken
    # The slots, read by themselves: no transaction's BEGIN, no read of the change
    # head (its hint matters only to a waiter that sleeps again).
    assert len(issued) == 1, issued
    assert "FROM slots" in issued[0]


async def test_another_tenants_append_does_not_wake_and_returns_nothing(
    parts: StoreParts, db_url: str, backend: str
) -> None:
    store = parts.store
    # alice has a change log, so her waiter listens for her hint only.
    await store.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id="alice")
    waiter = asyncio.create_task(store.threads.wait("t", after=0, user_id="alice", timeout=GUARD_S))
    await asleep(parts.db)
    woken = parts.db.signal.wakeups
    await in_other_process(db_url, "append", "bob", "t")  # same thread id, other tenant
    assert await settled(parts) == 0
    assert not waiter.done()
    if backend != "sqlite":
        # Postgres dispatches by tenant hint: bob's NOTIFY woke none of alice's waiters.
        # (SQLite's data_version says only "someone committed": all look, find nothing.)
        assert parts.db.signal.wakeups == woken
    assert await store.threads.wait("t", after=0, user_id="alice", timeout=0) == []
    # Still waiting, and what wakes it is alice's own next slot, nothing of bob's.
    await store.threads.append("t", {"n": 1}, from_id="a", to_id="b", user_id="alice")
    assert [(s.index, s.payload) for s in await waiter] == [(1, {"n": 1})]


async def test_a_rolled_back_append_wakes_nobody(parts: StoreParts, db_url: str) -> None:
    store = parts.store
    # alice has a change log, so her waiter listens for her hint only (not the sentinel's).
    await store.update_block("notes", "x", user_id="alice")
    waiter = asyncio.create_task(store.threads.wait("t", user_id="alice", timeout=GUARD_S))
    await asleep(parts.db)
    woken = parts.db.signal.wakeups
    assert await in_other_process(db_url, "rollback", "alice", "t") == "rolled back"
    assert await settled(parts) == 0
    assert not waiter.done()
    assert parts.db.signal.wakeups == woken
    # The same waiter is woken by a committed append, which got the index given up.
    await in_other_process(db_url, "append", "alice", "t")
    assert [s.index for s in await waiter] == [0]


async def test_wait_returns_what_is_there_and_follow_streams_new_slots(parts: StoreParts) -> None:
    store = parts.store
    threads = store.threads
    for n in range(3):
        await threads.append("t", {"n": n}, from_id="a", to_id="b", user_id="alice")
    assert [s.index for s in await threads.wait("t", after=0, user_id="alice")] == [1, 2]
    assert [s.index for s in await threads.wait("t", after=-1, user_id="alice")] == [0, 1, 2]
    assert await threads.wait("t", user_id="alice", timeout=0) == []  # after the last: none
    follow = threads.follow("t", after=1, user_id="alice")
    assert (await anext(follow)).index == 2
    later = asyncio.create_task(anext(follow))
    await asleep(parts.db)
    await threads.append("t", {"n": 3}, from_id="a", to_id="b", user_id="alice")
    async with asyncio.timeout(GUARD_S):
        assert (await later).payload == {"n": 3}
    await follow.aclose()


async def test_100_waiters_share_one_listening_connection(
    engine: AsyncEngine, parts: StoreParts, backend: str
) -> None:
    store = parts.store
    waiters = [
        asyncio.create_task(store.threads.wait(f"t{i}", user_id=f"user{i % 10}", timeout=GUARD_S))
        for i in range(100)
    ]
    await asleep(parts.db, 100)
    assert parts.db.signal.connections == 1
    if backend != "sqlite":
        async with engine.connect() as conn:
            listeners = await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = :name"
                ),
                {"name": LISTENER_APPLICATION_NAME},
            )
        assert listeners == 1
    for i in range(100):
        await store.threads.append(
            f"t{i}", {"i": i}, from_id="a", to_id="b", user_id=f"user{i % 10}"
        )
    results = await asyncio.gather(*waiters)
    assert [[(s.index, s.payload) for s in r] for r in results] == [
        [(0, {"i": i})] for i in range(100)
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": -1},
        {"timeout": "5"},
        {"timeout": float("nan")},
        {"after": -2},
        {"after": "3"},
        {"after": True},
    ],
)
async def test_bad_wait_arguments_are_refused(parts: StoreParts, kwargs: dict[str, object]) -> None:
    store = parts.store
    with pytest.raises(InvalidInput):
        await store.threads.wait("t", user_id="alice", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        await store.threads.wait("bad thread id\x00", user_id="alice", timeout=0)
    assert parts.db.signal.waiter_count == 0


@pytest.mark.parametrize("after", [MAX_SLOT_INDEX + 1, 2**63 - 1, 2**63, 2**64])
async def test_a_slot_index_past_32_bits_is_refused(parts: StoreParts, after: int) -> None:
    store = parts.store
    # Slot indexes are 32-bit on both backends; a larger one is a caller's error,
    # not a driver's overflow (nor, on SQLite, a wait for a slot that cannot come).
    await store.threads.append("t", 0, from_id="a", to_id="b", user_id="alice")
    with pytest.raises(InvalidInput, match=f"between -1 and {MAX_SLOT_INDEX}"):
        await store.threads.wait("t", after=after, timeout=0, user_id="alice")
    follow = store.threads.follow("t", after=after, user_id="alice")
    with pytest.raises(InvalidInput, match=f"between -1 and {MAX_SLOT_INDEX}"):
        async with asyncio.timeout(GUARD_S):
            await anext(follow)
    assert parts.db.signal.waiter_count == 0
    # The largest index a thread can have is a position like any other.
    assert await store.threads.wait("t", after=MAX_SLOT_INDEX, timeout=0, user_id="alice") == []
    # Reads by index keep Python's slice semantics for any integer.
    assert await store.threads.get_slice("t", after, after + 1, user_id="alice") == []
    assert await store.threads.get_slice("t", -after, user_id="alice") != []
    with pytest.raises(NotFound):
        await store.threads.get_slot("t", after, user_id="alice")


async def test_the_sync_store_blocks_in_wait_and_iterates_follow(db_url: str) -> None:
    def scenario() -> list[int]:
        with SyncMemoryStore.open(db_url) as sync:
            assert sync.threads.wait("t", user_id="alice", timeout=0) == []
            sync.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id="alice")
            got = [s.index for s in sync.threads.wait("t", after=-1, user_id="alice")]
            follow = sync.threads.follow("t", after=-1, user_id="alice")
            got.append(next(follow).index)
            change = next(iter(sync.changes(user_id="alice", after="")))
            assert (change.kind, change.key, change.slot_index) == ("thread_appended", "t", 0)
            return got

    assert await asyncio.to_thread(scenario) == [0, 0]
