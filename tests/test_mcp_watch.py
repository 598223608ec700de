"""The change watch behind ``memstore mcp`` subscriptions (plain Python, no MCP SDK).

A subscription is confirmed right after :class:`TenantWatch` is entered, so a change
committed after entry must be delivered even before the watch is first iterated;
and a watch sees its own tenant only.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from memstore import MemoryStore
from memstore.mcp.resources import ResourceRef, block_uri, parse_uri, thread_uri
from memstore.mcp.watch import TenantWatch, touched
from memstore.types import Change, ChangeKind

WAIT = 20.0


async def test_a_change_right_after_entry_is_delivered(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        for existing_log in (False, True):
            user = f"alice-{existing_log}"
            if existing_log:
                await store.update_block("goals", "before the watch", user_id=user)
            async with TenantWatch(store, user) as changes:
                # Committed before the feed is first asked for anything.
                await store.update_block("persona", "after entry", user_id=user)
                await store.update_block("persona", "secret", user_id="bob")
                await store.threads.append("tasks", 1, from_id="a", to_id="b", user_id=user)
                first = await asyncio.wait_for(anext(changes), WAIT)
                second = await asyncio.wait_for(anext(changes), WAIT)
            # Not the change before entry, not bob's: alice's two, in commit order.
            assert (first.kind, first.key) == (ChangeKind.BLOCK_UPDATED, "persona")
            assert (second.kind, second.key) == (ChangeKind.THREAD_APPENDED, "tasks")
            assert first.user_id == second.user_id == user


def _change(kind: ChangeKind, key: str | None) -> Change:
    return Change(kind=kind, key=key, at=datetime.now(UTC), position="e:1")


def test_touched_maps_changes_to_subscribed_uris() -> None:
    subscribed = {
        uri: parse_uri(uri) for uri in (block_uri("per sona"), thread_uri("t/1"), block_uri("t/1"))
    }
    assert subscribed[block_uri("per sona")] == ResourceRef("block", "per sona")
    assert touched(subscribed, _change(ChangeKind.BLOCK_UPDATED, "per sona")) == [
        "memstore://blocks/per%20sona"
    ]
    assert touched(subscribed, _change(ChangeKind.THREAD_APPENDED, "t/1")) == [
        "memstore://threads/t%2F1"
    ]
    assert touched(subscribed, _change(ChangeKind.BLOCK_DELETED, "t/1")) == [
        "memstore://blocks/t%2F1"
    ]
    assert touched(subscribed, _change(ChangeKind.FACT_ASSERTED, "per sona")) == []
    assert touched(subscribed, _change(ChangeKind.BLOCK_UPDATED, "other")) == []
    # After these the feed cannot say what changed: everything subscribed may be stale.
    for kind in (ChangeKind.FORGET, ChangeKind.CHANGES_PRUNED, ChangeKind.CHANGES_RESET):
        assert sorted(touched(subscribed, _change(kind, None))) == sorted(subscribed)
