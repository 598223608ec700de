"""Working blocks: pinned order, history, limits and optimistic concurrency."""

from __future__ import annotations

import asyncio

import pytest

from memstore import Conflict, LimitExceeded, MemoryStore, NotFound


async def test_blocks_keep_pinned_order_and_history(store: MemoryStore) -> None:
    await store.update_block("persona", "You are helpful.", user_id="alice")
    await store.update_block("goals", "Ship memstore.", user_id="alice")
    await store.append_block("persona", " Be brief.", user_id="alice")
    blocks = await store.working(user_id="alice")
    assert [(b.name, b.pinned_order, b.version) for b in blocks] == [
        ("persona", 0, 2),
        ("goals", 1, 1),
    ]
    assert blocks[0].content == "You are helpful. Be brief."
    history = await store.block_history("persona", user_id="alice")
    assert [(v.version, v.content) for v in history] == [
        (1, "You are helpful."),
        (2, "You are helpful. Be brief."),
    ]


async def test_block_limit_rejects_and_writes_nothing(db_url: str) -> None:
    async with MemoryStore.open(db_url, block_char_limit=20) as store:
        await store.update_block("persona", "x" * 20, user_id="alice")
        with pytest.raises(LimitExceeded):
            await store.append_block("persona", "y", user_id="alice")
        with pytest.raises(LimitExceeded):
            await store.update_block("goals", "z" * 21, user_id="alice")
        assert [b.name for b in await store.working(user_id="alice")] == ["persona"]
        assert len(await store.block_history("persona", user_id="alice")) == 1


async def test_expected_version_detects_lost_update(store: MemoryStore) -> None:
    block = await store.update_block("persona", "v1", user_id="alice")
    await store.update_block(
        "persona", "v2 by writer A", user_id="alice", expected_version=block.version
    )
    with pytest.raises(Conflict):
        await store.update_block(
            "persona", "v2 by writer B", user_id="alice", expected_version=block.version
        )
    with pytest.raises(Conflict):
        await store.update_block("persona", "create", user_id="alice", expected_version=0)
    (current,) = await store.working(user_id="alice")
    assert current.content == "v2 by writer A"


async def test_concurrent_appends_all_land(db_url: str) -> None:
    async with MemoryStore.open(db_url) as first, MemoryStore.open(db_url) as second:
        writers = [
            s.append_block("log", f"[{i}]", user_id="alice")
            for i in range(10)
            for s in (first, second)
        ]
        await asyncio.gather(*writers)
        (block,) = await first.working(user_id="alice")
    assert block.version == 20
    assert sorted(block.content.strip("[]").split("][")) == sorted(
        str(i) for i in range(10) for _ in range(2)
    )


async def test_delete_block(store: MemoryStore) -> None:
    await store.update_block("persona", "x", user_id="alice")
    await store.delete_block("persona", user_id="alice")
    assert await store.working(user_id="alice") == []
    assert await store.block_history("persona", user_id="alice") == []
    with pytest.raises(NotFound):
        await store.delete_block("persona", user_id="alice")
