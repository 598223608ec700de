"""Scoped working memory: keys, TTL, task state, scratchpad, checkpoints."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from conftest import ManualClock as Clock
from conftest import table_counts

from memstore import ANONYMOUS, InvalidInput, MemoryStore, NotFound, ScopeLevel, TaskState

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def clocked(db_url: str, clock: Clock) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(db_url, clock=clock, scratchpad_limit=3) as opened:
        yield opened


async def test_set_get_delete_exists(store: MemoryStore) -> None:
    wm = store.working_memory(session_id="s1", user_id="alice")
    await wm.set("plan", {"steps": ["a", "b"], "n": 2})
    await wm.set("nothing", None)
    assert await wm.get("plan") == {"steps": ["a", "b"], "n": 2}
    assert await wm.get("nothing", "default") is None  # a stored null is a value
    assert await wm.get("missing", "default") == "default"
    assert await wm.exists("plan") and not await wm.exists("missing")
    await wm.set("plan", [1])  # overwrite
    assert await wm.get("plan") == [1]
    assert await wm.delete("plan") is True
    assert await wm.delete("plan") is False
    assert await wm.get("plan") is None


async def test_values_must_be_json(db_url: str, store: MemoryStore) -> None:
    wm = store.working_memory(session_id="s1", user_id="alice")
    for bad in (object(), {1, 2}, float("inf"), {"t": (1, 2)}, datetime.now(UTC)):
        with pytest.raises(InvalidInput):
            await wm.set("k", bad)
    assert (await table_counts(db_url))["working_memory"] == 0


async def test_reserved_keys(store: MemoryStore) -> None:
    wm = store.working_memory(session_id="s1", user_id="alice")
    for key in ("_task_state", "_mine", "_scratchpad"):
        with pytest.raises(InvalidInput, match="reserved"):
            await wm.set(key, 1)
        with pytest.raises(InvalidInput, match="reserved"):
            await wm.delete(key)
    for key in ("", "x" * 256, "bad\nkey"):
        with pytest.raises(InvalidInput):
            await wm.set(key, 1)
    await wm.set("visible", 1)
    await wm.append_scratchpad("thinking")
    await wm.set_task_state(TaskState(task_id="task-1"))
    # Internal state is stored under reserved keys ("_" prefix) but hidden from listings.
    assert await wm.list_keys() == ["visible"]
    assert await wm.get_all() == {"visible": 1}
    assert await wm.exists("_task_state") and await wm.exists("_metadata")
    assert (await wm.get("_metadata"))["scope_type"] == "session"


async def test_list_keys_pattern_get_all_and_clear(store: MemoryStore) -> None:
    wm = store.working_memory(session_id="s1", user_id="alice")
    for key in ("user:1", "user:2", "cfg", "user_x"):
        await wm.set(key, key.upper())
    await wm.append_scratchpad("note")
    await wm.set_task_state(TaskState(task_id="t", progress_percent=10))
    assert await wm.list_keys() == ["cfg", "user:1", "user:2", "user_x"]
    assert await wm.list_keys("user:*") == ["user:1", "user:2"]
    assert await wm.list_keys("user?x") == ["user_x"]
    assert await wm.list_keys("nothing*") == []
    assert await wm.get_all() == {
        "cfg": "CFG",
        "user:1": "USER:1",
        "user:2": "USER:2",
        "user_x": "USER_X",
    }
    assert await wm.clear() == 4
    assert await wm.get_all() == {}
    # clear keeps the internal state.
    assert await wm.get_scratchpad() == ["note"]
    state = await wm.get_task_state()
    assert state is not None and state.progress_percent == 10


async def test_ttl_expiry_is_immediate_on_every_read_and_swept_by_gc(
    db_url: str, clocked: MemoryStore, clock: Clock
) -> None:
    wm = clocked.working_memory(session_id="s1", user_id="alice")
    await wm.set("short", "s", ttl_seconds=10)
    await wm.set("long", "l", ttl_seconds=100)
    await wm.set("forever", "f")
    clock.advance(seconds=9, microseconds=999_999)
    assert await wm.get("short") == "s"
    clock.advance(microseconds=1)  # exactly at expires_at: gone
    assert await wm.get("short", "gone") == "gone"
    assert not await wm.exists("short")
    assert await wm.list_keys() == ["forever", "long"]
    assert await wm.get_all() == {"forever": "f", "long": "l"}
    assert await wm.delete("short") is False
    stats = await wm.get_stats()
    assert stats["user_keys"] == 2

    # Still in the table until the sweep removes it; then only live rows remain.
    await wm.set("short2", "x", ttl_seconds=1)
    clock.advance(seconds=5)
    # long, forever, short2 and the internal _metadata row
    assert (await table_counts(db_url, "alice"))["working_memory"] == 4
    report = await clocked.gc(user_id="alice")
    assert report.expired_keys == 1  # short2 (short was deleted above)
    assert (await table_counts(db_url, "alice"))["working_memory"] == 3
    assert await wm.get_all() == {"forever": "f", "long": "l"}

    # Overwriting an expired key brings it back with the new TTL.
    clock.advance(seconds=100)
    assert await wm.get_all() == {"forever": "f"}
    await wm.set("long", "again", ttl_seconds=1)
    assert await wm.get("long") == "again"


async def test_default_ttl_and_bad_ttls(clocked: MemoryStore, clock: Clock) -> None:
    wm = clocked.working_memory(session_id="s1", user_id="alice", default_ttl_seconds=60)
    await wm.set("a", 1)
    await wm.set("b", 2, ttl_seconds=600)
    clock.advance(seconds=61)
    assert await wm.get_all() == {"b": 2}
    for ttl in (0, -1, float("nan"), float("inf"), True, "10"):
        with pytest.raises(InvalidInput):
            await wm.set("c", 3, ttl_seconds=ttl)  # type: ignore[arg-type]


async def test_task_state_and_progress_clamping(clocked: MemoryStore, clock: Clock) -> None:
    wm = clocked.working_memory(agent_id="agent-7", session_id="s1", user_id="alice")
    assert await wm.get_task_state() is None
    assert await wm.update_task_progress(progress_percent=50) is None
    stored = await wm.set_task_state(
        TaskState(
            task_id="task-1",
            task_type="research",
            description="find things",
            total_steps=4,
            context={"query": "cats"},
            started_at=T0,
        )
    )
    assert stored.updated_at == T0
    clock.advance(minutes=1)
    updated = await wm.update_task_progress(
        current_step=2, progress_percent=150.0, status="running"
    )
    assert updated is not None
    assert (updated.current_step, updated.progress_percent, updated.status) == (2, 100.0, "running")
    assert updated.updated_at == T0 + timedelta(minutes=1)
    assert await wm.get_task_state() == updated
    low = await wm.update_task_progress(progress_percent=-5)
    assert low is not None and low.progress_percent == 0.0 and low.current_step == 2
    assert (await wm.get_task_state()) == low
    assert low.context == {"query": "cats"} and low.started_at == T0

    with pytest.raises(InvalidInput):
        await wm.update_task_progress(progress_percent=float("nan"))
    with pytest.raises(InvalidInput):
        await wm.set_task_state(TaskState(task_id="t", progress_percent=101))
    with pytest.raises(InvalidInput):  # an int no float can hold is no percentage either
        await wm.set_task_state(TaskState(task_id="t", progress_percent=10**400))
    with pytest.raises(InvalidInput):
        await wm.set_task_state(TaskState(task_id="t", context={"x": object()}))
    with pytest.raises(InvalidInput):
        await wm.set_task_state({"task_id": "t"})  # type: ignore[arg-type]
    assert await wm.get_task_state() == low


async def test_scratchpad_is_bounded(clocked: MemoryStore, clock: Clock) -> None:
    wm = clocked.working_memory(session_id="s1", user_id="alice")  # scratchpad_limit=3
    for n in range(5):
        await wm.append_scratchpad(f"step {n}")
        clock.advance(seconds=1)
    assert await wm.get_scratchpad() == ["step 2", "step 3", "step 4"]
    stamped = await wm.get_scratchpad_with_timestamps()
    assert [e["timestamp"] for e in stamped] == [T0 + timedelta(seconds=n) for n in (2, 3, 4)]
    assert (await wm.get_stats())["scratchpad_entries"] == 3
    assert await wm.clear_scratchpad() == 3
    assert await wm.get_scratchpad() == []
    assert await wm.clear_scratchpad() == 0


async def test_concurrent_scratchpad_appends_are_not_lost(db_url: str) -> None:
    async with MemoryStore.open(db_url, scratchpad_limit=100) as store:
        wm = store.working_memory(session_id="s1", user_id="alice")
        await asyncio.gather(*(wm.append_scratchpad(f"n{i}") for i in range(20)))
        assert sorted(await wm.get_scratchpad()) == sorted(f"n{i}" for i in range(20))


async def test_checkpoint_round_trip(clocked: MemoryStore, clock: Clock) -> None:
    wm = clocked.working_memory(project_id="p", session_id="s1", user_id="alice")
    await wm.set("a", {"x": 1})
    await wm.set("b", [1, 2])
    await wm.set("soon", 1, ttl_seconds=30)
    await wm.append_scratchpad("thought 1")
    await wm.set_task_state(TaskState(task_id="t1", current_step=1))
    first = await wm.create_checkpoint("before the risky step")
    assert str(uuid.UUID(first)) == first and uuid.UUID(first).version == 4

    clock.advance(seconds=1)
    await wm.set("a", "changed")
    await wm.delete("b")
    await wm.set("c", 3)
    await wm.append_scratchpad("thought 2")
    await wm.update_task_progress(current_step=5)
    second = await wm.create_checkpoint()

    await wm.restore_checkpoint(first)
    assert await wm.get_all() == {"a": {"x": 1}, "b": [1, 2], "soon": 1}
    assert await wm.get_scratchpad() == ["thought 1"]
    state = await wm.get_task_state()
    assert state is not None and state.current_step == 1

    listed = await wm.list_checkpoints()
    assert [c["id"] for c in listed] == [first, second]
    assert listed[0]["description"] == "before the risky step"
    assert listed[0]["created_at"] == T0 and listed[1]["created_at"] == T0 + timedelta(seconds=1)
    assert (await wm.get_stats())["checkpoint_count"] == 2

    # A key keeps its absolute expiry: expired since the snapshot, it stays gone.
    clock.advance(seconds=60)
    await wm.restore_checkpoint(second)
    assert await wm.get_all() == {"a": "changed", "c": 3}
    assert await wm.get_scratchpad() == ["thought 1", "thought 2"]

    assert await wm.delete_checkpoint(first) is True
    assert await wm.delete_checkpoint(first) is False
    with pytest.raises(NotFound):
        await wm.restore_checkpoint(first)
    with pytest.raises(NotFound):
        await wm.restore_checkpoint(str(uuid.uuid4()))
    assert await wm.get_all() == {"a": "changed", "c": 3}  # a failed restore changes nothing
    # Checkpoints belong to their scope and tenant.
    with pytest.raises(NotFound):
        await clocked.working_memory(
            project_id="p", session_id="s1", user_id="bob"
        ).restore_checkpoint(second)
    with pytest.raises(NotFound):
        await clocked.working_memory(session_id="s1", user_id="alice").restore_checkpoint(second)


async def test_scopes_and_tenants_are_isolated(store: MemoryStore) -> None:
    scopes = {
        "project": store.working_memory(project_id="p", user_id="alice"),
        "agent": store.working_memory(project_id="p", agent_id="a", user_id="alice"),
        "session": store.working_memory(
            project_id="p", agent_id="a", session_id="s", user_id="alice"
        ),
        "bare session": store.working_memory(session_id="s", user_id="alice"),
        "other project": store.working_memory(
            project_id="q", agent_id="a", session_id="s", user_id="alice"
        ),
        "bob": store.working_memory(project_id="p", agent_id="a", session_id="s", user_id="bob"),
        "anonymous": store.working_memory(
            project_id="p", agent_id="a", session_id="s", user_id=ANONYMOUS
        ),
    }
    for name, wm in scopes.items():
        await wm.set("who", name)
        await wm.append_scratchpad(name)
    for name, wm in scopes.items():
        assert await wm.get_all() == {"who": name}
        assert await wm.get_scratchpad() == [name]

    session = scopes["session"]
    assert session.scope.scope_type is ScopeLevel.SESSION
    assert session.scope.to_key_prefix() == "project:p/agent_instance:a/session:s"
    parent = session.parent()
    assert parent is not None and parent.scope.scope_type is ScopeLevel.AGENT_INSTANCE
    assert await parent.get("who") == "agent"
    grand = parent.parent()
    assert grand is not None and await grand.get("who") == "project"
    assert grand.parent() is None

    await scopes["bob"].clear()
    assert await session.get("who") == "session"
    await store.forget(user_id="bob")
    assert await scopes["bob"].get_all() == {}
    assert await scopes["anonymous"].get("who") == "anonymous"

    with pytest.raises(InvalidInput):
        store.working_memory(user_id="alice")
    with pytest.raises(InvalidInput):
        store.working_memory(session_id="", user_id="alice")


async def test_stats(store: MemoryStore) -> None:
    wm = store.working_memory(agent_id="a1", user_id="alice")
    assert (await wm.get_stats())["total_keys"] == 0
    await wm.set("k1", 1)
    await wm.set("k2", 2)
    await wm.append_scratchpad("x")
    await wm.create_checkpoint()
    stats = await wm.get_stats()
    assert stats["scope_type"] == "agent_instance" and stats["scope_id"] == "a1"
    assert stats["user_id"] == "alice"
    assert (stats["user_keys"], stats["total_keys"]) == (2, 4)  # + _metadata, _scratchpad
    assert stats["checkpoint_count"] == 1 and stats["scratchpad_entries"] == 1
    assert stats["has_task_state"] is False
    assert await wm.is_healthy()
