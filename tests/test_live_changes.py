"""store.changes(): one tenant's committed changes, resumable, across processes."""

from __future__ import annotations

import asyncio

import pytest

from memstore import ChangeKind, Fact, InvalidInput, MemoryStore
from tests.conftest import ManualClock
from tests.live_support import GUARD_S, asleep, in_other_process
from tests.store_parts import StoreParts

pytestmark = pytest.mark.slow

K = ChangeKind


async def _write_everything(store: MemoryStore, user: str) -> None:
    await store.update_block("notes", "v1", user_id=user)
    await store.assert_fact(Fact(subject="ann", predicate="lives_in", object="Paris", user_id=user))
    moved = await store.assert_fact(
        Fact(subject="ann", predicate="lives_in", object="Berlin", user_id=user)
    )
    await store.retract_fact(moved.fact_id, user_id=user)
    await store.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id=user)
    await store.delete_block("notes", user_id=user)


async def _take(feed: object, n: int) -> list:  # type: ignore[type-arg]
    async with asyncio.timeout(GUARD_S):
        return [await anext(feed) for _ in range(n)]  # type: ignore[call-overload]


async def test_changes_are_the_tenants_own_in_commit_order_and_resume_from_a_position(
    parts: StoreParts,
) -> None:
    store = parts.store
    feed = store.changes(user_id="alice", after="")
    await _write_everything(store, "bob")
    await _write_everything(store, "alice")
    got = await _take(feed, 7)
    assert [c.kind for c in got] == [
        K.BLOCK_UPDATED,
        K.FACT_ASSERTED,
        K.FACT_SUPERSEDED,
        K.FACT_ASSERTED,
        K.FACT_RETRACTED,
        K.THREAD_APPENDED,
        K.BLOCK_DELETED,
    ]
    assert {c.user_id for c in got} == {"alice"}
    assert got[2].key == got[1].key  # the superseded fact is the first one asserted
    assert got[5].key == "t" and got[5].slot_index == 0
    # Resuming after the third change yields the fourth onwards, as first seen.
    resumed = store.changes(user_id="alice", after=got[2].position)
    assert await _take(resumed, 4) == got[3:]
    # A filter keeps only the kinds asked for.
    only = store.changes(user_id="alice", after="", kinds=[K.THREAD_APPENDED, "block_deleted"])
    assert [c.kind for c in await _take(only, 2)] == [K.THREAD_APPENDED, K.BLOCK_DELETED]
    # Nothing more of alice: the feed sleeps (bob's writes are not alice's).
    later = asyncio.create_task(anext(feed))
    await asleep(parts.db)
    await store.update_block("other", "x", user_id="bob")
    await store.update_block("last", "x", user_id="alice")
    async with asyncio.timeout(GUARD_S):
        assert (await later).key == "last"
    for each in (feed, resumed, only):
        await each.aclose()


async def test_a_change_committed_in_another_process_is_delivered(
    parts: StoreParts, db_url: str
) -> None:
    store = parts.store
    feed = store.changes(user_id="alice")  # from now on
    first = asyncio.create_task(anext(feed))
    await asleep(parts.db)
    await in_other_process(db_url, "block", "bob", "elsewhere")
    await in_other_process(db_url, "block", "alice", "from-b")
    async with asyncio.timeout(GUARD_S):
        change = await first
    assert (change.kind, change.key, change.user_id) == (K.BLOCK_UPDATED, "from-b", "alice")
    await feed.aclose()


async def test_forget_is_reported_and_leaves_no_log(parts: StoreParts) -> None:
    store = parts.store
    await store.update_block("notes", "v1", user_id="alice")
    [seen] = await _take(store.changes(user_id="alice", after=""), 1)
    live = store.changes(user_id="alice", after=seen.position)
    pending = asyncio.create_task(anext(live))
    await asleep(parts.db)
    await store.forget(user_id="alice")
    async with asyncio.timeout(GUARD_S):
        forgot = await pending
    assert (forgot.kind, forgot.key) == (K.FORGET, None)
    # A position from before the forget is reported the same way when resumed later.
    [again] = await _take(store.changes(user_id="alice", after=seen.position), 1)
    assert again.kind == K.FORGET
    # After the forget, the tenant's new changes follow in a new epoch.
    await store.update_block("fresh", "v", user_id="alice")
    fresh = await _take(live, 1)
    assert (fresh[0].kind, fresh[0].key) == (K.BLOCK_UPDATED, "fresh")
    assert fresh[0].position.split(":")[0] != seen.position.split(":")[0]
    await live.aclose()


async def test_gc_prunes_old_changes_and_a_stale_position_is_told(db_url: str) -> None:
    clock = ManualClock()
    async with MemoryStore.open(db_url, clock=clock, change_retention_seconds=3600) as store:
        for n in range(3):
            await store.update_block("notes", f"v{n}", user_id="alice")
        old = await _take(store.changes(user_id="alice", after=""), 3)
        clock.advance(hours=2)
        await store.update_block("notes", "new", user_id="alice")
        report = await store.gc(user_id="alice")
        assert report.pruned_changes == 3
        resumed = await _take(store.changes(user_id="alice", after=old[0].position), 2)
        assert [c.kind for c in resumed] == [K.CHANGES_PRUNED, K.BLOCK_UPDATED]
        assert resumed[1].position.endswith(":4")
        # From the oldest retained change: no warning, just what is left.
        [left] = await _take(store.changes(user_id="alice", after=""), 1)
        assert left == resumed[1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"after": 3},
        {"after": "not-a-position"},
        {"after": "abc:-1"},
        {"kinds": "block_updated"},
        {"kinds": ["no_such_kind"]},
        {"kinds": []},
    ],
)
async def test_bad_changes_arguments_are_refused(
    parts: StoreParts, kwargs: dict[str, object]
) -> None:
    store = parts.store
    with pytest.raises(InvalidInput):
        await anext(store.changes(user_id="alice", **kwargs))  # type: ignore[arg-type]
    assert parts.db.signal.waiter_count == 0
