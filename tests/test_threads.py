"""Thread context buffers: append, reads, immutability, limits, GC."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import FrozenInstanceError, dataclass
from datetime import UTC, datetime, timedelta

import pytest
from conftest import ManualClock as Clock
from conftest import table_counts
from sqlalchemy import exc as sa_exc
from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import ANONYMOUS, InvalidInput, LimitExceeded, MemoryStore, NotFound, TenantRequired
from memstore.cli import main as cli_main
from memstore.models import SlotRow
from memstore.types import Slot

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Greeting:
    text: str
    loud: bool = False


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def clocked(db_url: str, clock: Clock) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(db_url, clock=clock) as opened:
        yield opened


async def fill(store: MemoryStore, thread_id: str, n: int, user_id: str | None = "alice") -> None:
    for i in range(n):
        await store.threads.append(
            thread_id, {"i": i}, from_id=f"a{i % 2}", to_id="b", user_id=user_id
        )


async def test_append_returns_immutable_slot_with_metadata(
    clocked: MemoryStore, clock: Clock
) -> None:
    slot = await clocked.threads.append(
        "t1",
        {"q": "hi"},
        from_id="user",
        to_id="agent",
        user_id="alice",
        own_name="agent",
        is_self_call=True,
        usage_instructions="be nice",
        todo_nudge="todo",
    )
    assert (slot.thread_id, slot.from_id, slot.to_id, slot.index) == ("t1", "user", "agent", 0)
    assert slot.metadata.timestamp == T0
    assert slot.metadata.payload_type == "dict"
    assert slot.metadata.own_name == "agent" and slot.metadata.is_self_call
    with pytest.raises(FrozenInstanceError):
        slot.metadata.slot_index = 5  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        slot.payload = {}  # type: ignore[misc]

    clock.advance(seconds=1)
    second = await clocked.threads.append(
        "t1", "text", from_id="agent", to_id="user", user_id="alice"
    )
    assert second.index == 1 and second.payload_type == "str"
    (stored, again) = await clocked.threads.get_thread("t1", user_id="alice")
    assert stored == slot  # everything round-trips through the database
    assert again == second and again.timestamp == T0 + timedelta(seconds=1)


@pytest.mark.parametrize(
    ("payload", "type_name", "stored"),
    [
        ({"a": [1, 2.5, None]}, "dict", {"a": [1, 2.5, None]}),
        ([1, "x"], "list", [1, "x"]),
        ("plain", "str", "plain"),
        (7, "int", 7),
        (None, "NoneType", None),
        (Greeting("hello"), "Greeting", {"text": "hello", "loud": False}),
    ],
)
async def test_payloads_are_stored_as_json_with_their_type(
    store: MemoryStore, payload: object, type_name: str, stored: object
) -> None:
    slot = await store.threads.append("t", payload, from_id="a", to_id="b", user_id="alice")
    assert slot.payload_type == type_name
    (read,) = await store.threads.get_thread("t", user_id="alice")
    assert read.payload == stored and read.payload_type == type_name


@pytest.mark.parametrize(
    "payload", [object(), {1, 2}, {"x": float("nan")}, {1: "int key"}, ("tu", "ple"), b"bytes"]
)
async def test_non_json_payload_is_invalid_and_writes_nothing(
    db_url: str, store: MemoryStore, payload: object
) -> None:
    with pytest.raises(InvalidInput):
        await store.threads.append("t", payload, from_id="a", to_id="b", user_id="alice")
    assert not await store.threads.thread_exists("t", user_id="alice")
    counts = await table_counts(db_url)
    assert counts["threads"] == 0 and counts["slots"] == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thread_id": ""},
        {"from_id": " "},
        {"to_id": "x\n"},
        {"user_id": "__reserved"},
        {"own_name": ""},
        {"is_self_call": "yes"},
        {"todo_nudge": "nul\x00"},
    ],
)
async def test_bad_arguments_are_refused(
    db_url: str, store: MemoryStore, kwargs: dict[str, object]
) -> None:
    args: dict[str, object] = {"thread_id": "t", "from_id": "a", "to_id": "b"} | kwargs
    thread_id = args.pop("thread_id")
    with pytest.raises(InvalidInput):
        await store.threads.append(thread_id, {}, **args)  # type: ignore[arg-type]
    assert (await table_counts(db_url))["slots"] == 0


async def test_reads_slice_type_sender_and_iteration(store: MemoryStore) -> None:
    threads = store.threads
    for i in range(7):
        payload = Greeting(f"g{i}") if i % 3 == 0 else {"i": i}
        await threads.append(
            "t", payload, from_id="even" if i % 2 == 0 else "odd", to_id="b", user_id="alice"
        )
    everything = await threads.get_thread("t", user_id="alice")
    assert [s.index for s in everything] == list(range(7))

    for start, end in [
        (0, None),
        (2, 5),
        (-3, None),
        (-3, -1),
        (5, 100),
        (6, 2),
        (0, 0),
        (-100, 2),
    ]:
        got = await threads.get_slice("t", start, end, user_id="alice")
        assert got == everything[start:end], (start, end)
    assert await threads.get_slice("missing", user_id="alice") == []
    assert (await threads.get_slot("t", -1, user_id="alice")).index == 6
    assert (await threads.get_slot("t", 2, user_id="alice")).index == 2
    with pytest.raises(NotFound):
        await threads.get_slot("t", 7, user_id="alice")

    assert [s.index for s in await threads.get_by_type("t", "Greeting", user_id="alice")] == [
        0,
        3,
        6,
    ]
    assert [s.index for s in await threads.get_by_type("t", "dict", user_id="alice")] == [
        1,
        2,
        4,
        5,
    ]
    assert [s.index for s in await threads.get_from("t", "odd", user_id="alice")] == [1, 3, 5]

    streamed = [s async for s in threads.iterate("t", user_id="alice", batch_size=2)]
    assert streamed == everything
    assert [s async for s in threads.iterate("missing", user_id="alice")] == []
    assert await threads.length("t", user_id="alice") == 7
    assert await threads.length("missing", user_id="alice") == 0


async def test_exists_delete_and_stats(db_url: str, store: MemoryStore) -> None:
    await fill(store, "t1", 3)
    await fill(store, "t2", 2)
    await fill(store, "t1", 1, user_id="bob")
    assert await store.threads.thread_exists("t1", user_id="alice")
    assert not await store.threads.thread_exists("t3", user_id="alice")

    stats = await store.threads.stats(user_id="alice")
    assert stats["thread_count"] == 2 and stats["total_slots"] == 5
    assert stats["threads"] == ["t1", "t2"]
    assert stats["max_slots_per_thread"] == 10_000 and stats["max_threads"] == 1_000

    assert await store.threads.delete_thread("t1", user_id="alice") is True
    assert await store.threads.delete_thread("t1", user_id="alice") is False
    assert not await store.threads.thread_exists("t1", user_id="alice")
    assert await store.threads.get_thread("t1", user_id="alice") == []
    # Scan the table itself: the slots are gone, bob's same-named thread is not.
    assert (await table_counts(db_url, "alice"))["slots"] == 2
    assert (await table_counts(db_url, "bob"))["slots"] == 1
    # A deleted thread starts again at index 0.
    slot = await store.threads.append("t1", {}, from_id="a", to_id="b", user_id="alice")
    assert slot.index == 0


async def test_tenants_are_isolated(store: MemoryStore) -> None:
    await fill(store, "shared", 3, user_id="alice")
    bob = await store.threads.append("shared", {"bob": 1}, from_id="a", to_id="b", user_id="bob")
    anon = await store.threads.append("shared", {}, from_id="a", to_id="b", user_id=ANONYMOUS)
    assert bob.index == 0 and anon.index == 0  # each tenant has its own counter
    assert [s.payload for s in await store.threads.get_thread("shared", user_id="bob")] == [
        {"bob": 1}
    ]
    assert len(await store.threads.get_thread("shared", user_id="alice")) == 3
    assert await store.threads.get_from("shared", "a0", user_id="bob") == []
    assert (await store.threads.stats(user_id=ANONYMOUS))["total_slots"] == 1


async def test_database_rejects_update_of_a_slot(engine: AsyncEngine, store: MemoryStore) -> None:
    await fill(store, "t", 2)
    for statement in (
        text("UPDATE slots SET from_id = 'mallory'"),
        text("UPDATE slots SET payload_type = 'x' WHERE slot_index = 1"),
        update(SlotRow).where(SlotRow.user_id == "alice").values(todo_nudge="changed"),
    ):
        with pytest.raises(sa_exc.DBAPIError, match="append-only"):
            async with engine.begin() as conn:
                await conn.execute(statement)
    slots = await store.threads.get_thread("t", user_id="alice")
    assert [s.from_id for s in slots] == ["a0", "a1"]
    assert [s.metadata.todo_nudge for s in slots] == ["", ""]
    assert [s.payload_type for s in slots] == ["dict", "dict"]
    # DELETE stays possible (delete_thread, GC and forget rely on it).
    async with engine.begin() as conn:
        await conn.execute(text("DELETE FROM slots WHERE slot_index = 1"))
    assert len(await store.threads.get_thread("t", user_id="alice")) == 1


async def test_slot_limit_refuses_append_and_writes_nothing(db_url: str) -> None:
    async with MemoryStore.open(db_url, max_slots_per_thread=3) as store:
        await fill(store, "t", 3)
        with pytest.raises(LimitExceeded, match="max_slots_per_thread"):
            await store.threads.append("t", {"late": True}, from_id="a", to_id="b", user_id="alice")
        assert [s.payload for s in await store.threads.get_thread("t", user_id="alice")] == [
            {"i": 0},
            {"i": 1},
            {"i": 2},
        ]
        assert (await table_counts(db_url, "alice"))["slots"] == 3
        # Other threads and tenants have their own budget.
        await fill(store, "other", 3)
        await fill(store, "t", 3, user_id="bob")
        assert (await store.threads.stats(user_id="alice"))["total_slots"] == 6


async def test_append_from_log_sees_the_log_and_none_writes_nothing(store: MemoryStore) -> None:
    """What the OpenAI Agents session's pop_item is built on: read, decide, append."""
    await fill(store, "t", 2)
    seen: list[list[object]] = []

    def undo(log: list[Slot]) -> dict[str, int] | None:
        seen.append([s.payload for s in log])
        return {"undo": len(log)} if len(log) < 3 else None

    slot = await store.threads.append_from_log("t", undo, from_id="a", to_id="b", user_id="alice")
    assert slot is not None and slot.index == 2 and slot.payload == {"undo": 2}
    assert slot.metadata.payload_type == "dict" and slot.metadata.from_id == "a"
    # None writes nothing and gives the claimed index back: the next append gets it.
    assert (
        await store.threads.append_from_log("t", undo, from_id="a", to_id="b", user_id="alice")
        is None
    )
    assert seen == [[{"i": 0}, {"i": 1}], [{"i": 0}, {"i": 1}, {"undo": 2}]]
    assert await store.threads.length("t", user_id="alice") == 3
    nxt = await store.threads.append("t", {"i": 3}, from_id="a", to_id="b", user_id="alice")
    assert nxt.index == 3
    with pytest.raises(InvalidInput):
        await store.threads.append_from_log("t", undo, from_id="", to_id="b", user_id="alice")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_slots_per_thread": 0},
        {"max_threads": -1},
        {"thread_idle_ttl_seconds": 0},
        {"max_threads": True},
        {"scratchpad_limit": 0},
    ],
)
async def test_bad_limits_are_refused(db_url: str, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        async with MemoryStore.open(db_url, **kwargs):  # type: ignore[arg-type]
            pass


async def test_gc_keeps_the_newest_threads(db_url: str, clocked: MemoryStore, clock: Clock) -> None:
    for name in ["t0", "t1", "t2", "t3", "t4"]:
        await fill(clocked, name, 2)
        clock.advance(minutes=1)
    await fill(clocked, "t0", 1)  # activity does not make t0 newer: age is by creation
    await fill(clocked, "b0", 1, user_id="bob")

    removed = list((await clocked.gc(user_id="alice", max_threads=2)).threads)
    assert [(r.thread_id, r.slot_count, r.reason) for r in removed] == [
        ("t0", 3, "max_threads"),
        ("t1", 2, "max_threads"),
        ("t2", 2, "max_threads"),
    ]
    assert all(r.user_id == "alice" for r in removed)
    assert [t.thread_id for t in await clocked.threads.list_threads(user_id="alice")] == [
        "t3",
        "t4",
    ]
    counts = await table_counts(db_url, "alice")
    assert counts["threads"] == 2 and counts["slots"] == 4
    assert await clocked.threads.thread_exists("b0", user_id="bob")
    assert (await clocked.gc(user_id="alice", max_threads=2)).threads == ()


async def test_gc_deletes_idle_threads(db_url: str, clock: Clock) -> None:
    async with MemoryStore.open(db_url, clock=clock, thread_idle_ttl_seconds=3600) as store:
        await fill(store, "old", 2)
        await fill(store, "revived", 1)
        clock.advance(minutes=50)
        await fill(store, "recent", 1)
        clock.advance(minutes=20)  # old/revived idle for 70 min, recent for 20
        await fill(store, "revived", 1)
        removed = (await store.gc(user_id="alice")).threads
        assert [(r.thread_id, r.reason) for r in removed] == [("old", "idle")]
        assert await store.threads.thread_exists("revived", user_id="alice")
        info = await store.threads.thread_info("revived", user_id="alice")
        assert info is not None and info.created_at == T0 and info.last_activity_at == clock.now
        # Exactly at the TTL a thread is not yet idle; one microsecond later it is.
        clock.advance(minutes=40)
        assert (await store.gc(user_id="alice")).threads == ()
        clock.advance(microseconds=1)
        assert [r.thread_id for r in (await store.gc(user_id="alice")).threads] == ["recent"]
        assert (await table_counts(db_url, "alice"))["slots"] == 2


async def test_store_gc_covers_every_tenant_and_sweeps_working_memory(
    db_url: str, clocked: MemoryStore, clock: Clock
) -> None:
    for user in ("alice", "bob", ANONYMOUS):
        for name in ("a", "b", "c"):
            await fill(clocked, name, 1, user_id=user)
            clock.advance(seconds=1)
        await clocked.working_memory(session_id="s", user_id=user).set("k", 1, ttl_seconds=5)
    await fill(clocked, "solo", 1, user_id="carol")
    clock.advance(seconds=10)

    report = await clocked.gc_all_tenants(max_threads=2)
    assert sorted((r.user_id, r.thread_id) for r in report.threads) == [
        (ANONYMOUS, "a"),
        ("alice", "a"),
        ("bob", "a"),
    ]
    assert report.slots == 3 and report.expired_keys == 3
    assert (await table_counts(db_url))["working_memory"] == 3  # the _metadata rows stay
    assert await clocked.threads.thread_exists("solo", user_id="carol")

    with pytest.raises(TenantRequired):
        await clocked.gc()
    one = await clocked.gc(user_id="alice", max_threads=1)
    assert [r.thread_id for r in one.threads] == ["b"]
    assert await clocked.threads.length("b", user_id="bob") == 1

    # Idle TTL across every tenant: only the thread appended to recently survives.
    clock.advance(hours=1)
    await fill(clocked, "c", 1, user_id="bob")
    idle = await clocked.gc_all_tenants(thread_idle_ttl_seconds=1800)
    assert sorted((r.user_id, r.thread_id, r.reason) for r in idle.threads) == [
        (ANONYMOUS, "b", "idle"),
        (ANONYMOUS, "c", "idle"),
        ("alice", "c", "idle"),
        ("bob", "b", "idle"),
        ("carol", "solo", "idle"),
    ]
    assert (await table_counts(db_url))["threads"] == 1
    assert await clocked.threads.length("c", user_id="bob") == 2


async def test_concurrent_appends_in_one_process(store: MemoryStore) -> None:
    slots = await asyncio.gather(
        *(
            store.threads.append("t", {"n": n}, from_id="a", to_id="b", user_id="alice")
            for n in range(25)
        )
    )
    assert sorted(s.index for s in slots) == list(range(25))
    stored = await store.threads.get_thread("t", user_id="alice")
    assert {s.index: s.payload["n"] for s in stored} == {s.index: s.payload["n"] for s in slots}


async def test_forget_removes_threads_slots_and_working_memory(
    db_url: str, store: MemoryStore
) -> None:
    for user in ("alice", "bob"):
        await fill(store, "t", 3, user_id=user)
        wm = store.working_memory(project_id="p", session_id="s", user_id=user)
        await wm.set("k", {"v": 1})
        await wm.append_scratchpad("note")
        await wm.create_checkpoint("cp")
    before = await table_counts(db_url, "alice")
    dump = await store.export(user_id="alice")  # the new tables are exported too
    assert [row["slot_index"] for row in dump["tables"]["slots"]] == [0, 1, 2]
    assert dump["tables"]["working_memory_checkpoints"][0]["description"] == "cp"
    json.dumps(dump)
    for table in ("threads", "slots", "working_memory", "working_memory_checkpoints"):
        assert before[table] > 0, table

    removed = await store.forget(user_id="alice")
    assert removed == sum(before.values())
    assert set((await table_counts(db_url, "alice")).values()) == {0}
    assert await table_counts(db_url, "bob") == before  # same shape of data, untouched
    assert await store.threads.get_thread("t", user_id="alice") == []
    assert await store.working_memory(project_id="p", session_id="s", user_id="bob").get("k") == {
        "v": 1
    }


def test_cli_gc(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``memstore gc`` against a real database (sync test: the CLI runs its own loop)."""
    old = Clock(datetime.now(UTC) - timedelta(days=2))

    async def setup() -> None:
        async with MemoryStore.open(db_url, clock=old) as store:
            for name in ("x", "y", "z"):
                await fill(store, name, 2)
                old.advance(seconds=1)
        async with MemoryStore.open(db_url) as store:
            await fill(store, "fresh", 1)

    asyncio.run(setup())
    assert (
        cli_main(
            [
                "gc",
                "--url",
                db_url,
                "--max-threads",
                "3",
                "--idle-ttl-seconds",
                "86400",
                "--user-id",
                "alice",
            ]
        )
        == 0
    )

    async def remaining() -> list[str]:
        async with MemoryStore.open(db_url) as store:
            return [t.thread_id for t in await store.threads.list_threads(user_id="alice")]

    assert asyncio.run(remaining()) == ["fresh"]
    assert cli_main(["gc", "--url", db_url, "--max-threads", "0"]) == 1  # refused, no change
    assert asyncio.run(remaining()) == ["fresh"]
    assert "removed 3 threads (6 slots)" in capsys.readouterr().out

    # Every tenant, JSON report: the anonymous tenant's idle thread goes too.
    asyncio.run(setup_anonymous(db_url))
    assert cli_main(["gc", "--url", db_url, "--idle-ttl-seconds", "3600", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["threads"] == [
        {"user_id": ANONYMOUS, "thread_id": "anon", "slot_count": 2, "reason": "idle"}
    ]
    assert asyncio.run(remaining()) == ["fresh"]


async def setup_anonymous(db_url: str) -> None:
    async with MemoryStore.open(db_url, clock=Clock(datetime.now(UTC) - timedelta(days=1))) as s:
        await fill(s, "anon", 2, user_id=ANONYMOUS)
