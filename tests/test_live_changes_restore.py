"""store.changes() across restores: no saved position ever resumes into a silent skip.

An import (a restore) gives the tenant's log a new epoch, so every position
taken before it is reported as ``forget``; a position past the end of the log
(a database restored from an older copy) is reported as ``changes_reset``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memstore import Change, ChangeKind, MemoryStore
from tests.live_support import GUARD_S, asleep
from tests.store_parts import StoreParts

pytestmark = pytest.mark.slow

K = ChangeKind


async def _take(feed: Any, n: int) -> list[Change]:
    async with asyncio.timeout(GUARD_S):
        return [await anext(feed) for _ in range(n)]


def _epoch(change: Change) -> str:
    return change.position.split(":")[0]


async def test_a_position_past_the_end_of_the_log_is_reported_not_skipped(
    store: MemoryStore,
) -> None:
    await store.update_block("notes", "v1", user_id="alice")
    await store.update_block("notes", "v2", user_id="alice")
    _, last = await _take(store.changes(user_id="alice", after=""), 2)
    for ahead in (10**17, 10**18 - 1):
        feed = store.changes(user_id="alice", after=f"{_epoch(last)}:{ahead}")
        [reset] = await _take(feed, 1)
        assert (reset.kind, reset.key, reset.user_id) == (K.CHANGES_RESET, None, "alice")
        assert reset.position == last.position  # the end of the log: resume from there
        await store.update_block("notes", f"after {ahead}", user_id="alice")
        [last] = await _take(feed, 1)
        assert (last.kind, last.key) == (K.BLOCK_UPDATED, "notes")
        await feed.aclose()
    # A kinds filter does not hide it.
    only = store.changes(user_id="alice", after=f"{_epoch(last)}:{10**17}", kinds=["fact_asserted"])
    assert [c.kind for c in await _take(only, 1)] == [K.CHANGES_RESET]
    await only.aclose()


async def test_a_restore_is_a_new_log_to_every_saved_position(store: MemoryStore) -> None:
    await store.update_block("notes", "v1", user_id="alice")
    [before] = await _take(store.changes(user_id="alice", after=""), 1)
    dump = await store.export(user_id="alice")
    await store.update_block("notes", "v2-after-export", user_id="alice")
    _, after_export = await _take(store.changes(user_id="alice", after=""), 2)
    await store.forget(user_id="alice")
    await store.import_(dump)
    await store.update_block("notes", "v3-new", user_id="alice")
    assert (await store.block_history("notes", user_id="alice"))[-1].content == "v3-new"
    for saved in (before, after_export):
        got = await _take(store.changes(user_id="alice", after=saved.position), 3)
        # Told that what it knew is gone, then the restored log (v1) and v3.
        assert [(c.kind, c.key) for c in got] == [
            (K.FORGET, None),
            (K.BLOCK_UPDATED, "notes"),
            (K.BLOCK_UPDATED, "notes"),
        ]
        assert {_epoch(c) for c in got} != {_epoch(saved)}
        assert got[2].position != after_export.position


async def test_an_import_under_another_user_id_gets_its_own_epoch(store: MemoryStore) -> None:
    await store.update_block("notes", "v1", user_id="alice")
    [mine] = await _take(store.changes(user_id="alice", after=""), 1)
    await store.import_(await store.export(user_id="alice"), user_id="carol")
    [copied] = await _take(store.changes(user_id="carol", after=""), 1)
    assert (copied.kind, copied.key, copied.user_id) == (K.BLOCK_UPDATED, "notes", "carol")
    assert _epoch(copied) != _epoch(mine)
    # alice's position names no epoch of carol's log: reported, never resumed into.
    [told] = await _take(store.changes(user_id="carol", after=mine.position), 1)
    assert told.kind == K.FORGET


async def test_an_import_wakes_the_tenants_readers(parts: StoreParts) -> None:
    store = parts.store
    await store.update_block("notes", "v1", user_id="alice")
    dump = await store.export(user_id="alice")
    feed = store.changes(user_id="carol", after="")
    pending = asyncio.create_task(anext(feed))
    await asleep(parts.db)
    await store.import_(dump, user_id="carol")
    async with asyncio.timeout(GUARD_S):
        got = await pending
    assert (got.kind, got.key, got.user_id) == (K.BLOCK_UPDATED, "notes", "carol")
    await feed.aclose()


async def test_an_imported_log_numbers_new_changes_past_its_own(store: MemoryStore) -> None:
    await store.update_block("notes", "v1", user_id="alice")
    dump = await store.export(user_id="alice")
    [head] = dump["tables"]["change_heads"]
    head["last_seq"] = 0  # a dump whose counter lags its changes
    await store.import_(dump, user_id="carol")
    await store.update_block("notes", "v2", user_id="carol")
    got = await _take(store.changes(user_id="carol", after=""), 2)
    assert [c.position.split(":")[1] for c in got] == ["1", "2"]
