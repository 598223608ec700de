"""threads.append as one call to the database: the slot, both counters and the change row agree.

On Postgres the append is one statement (memstore/backends/postgresql/append.py), on
SQLite one hand-over to the connection's thread (memstore/backends/sqlite/append.py).
These tests check what that statement could get wrong that the thread tests do not look
at: the change row's number and slot index, the counters, the wake-up payload, and a
failure in the middle leaving nothing behind, with the error translated.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import is_postgres
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Conflict, MemoryStore
from memstore.backends.postgresql.append import APPEND_SQL
from memstore.backends.sqlite.append import CHANGE_SQL, HEAD_SQL, SLOT_SQL, THREAD_SQL
from memstore.core.tenancy import storage_user_id
from memstore.db.signal import CHANNEL, hint_of
from memstore.types import ChangeKind
from tests.tenant_audit import find_violations

USER = "alice"


async def _rows(engine: AsyncEngine, sql: str, **params: Any) -> list[Any]:
    async with engine.connect() as conn:
        return list((await conn.execute(text(sql), params)).all())


async def _log(engine: AsyncEngine) -> list[tuple[int, str, str, int | None]]:
    return [
        (int(r[0]), str(r[1]), str(r[2]), r[3])
        for r in await _rows(
            engine,
            "SELECT seq, kind, key, slot_index FROM changes WHERE user_id = :u ORDER BY seq",
            u=storage_user_id(USER),
        )
    ]


async def _counters(engine: AsyncEngine, thread_id: str) -> tuple[int | None, int | None]:
    user = storage_user_id(USER)
    thread = await _rows(
        engine,
        "SELECT next_slot_index FROM threads WHERE user_id = :u AND thread_id = :t",
        u=user,
        t=thread_id,
    )
    head = await _rows(engine, "SELECT last_seq FROM change_heads WHERE user_id = :u", u=user)
    return (
        int(thread[0][0]) if thread else None,
        int(head[0][0]) if head else None,
    )


async def test_each_append_numbers_one_change_that_names_its_slot(
    store: MemoryStore, engine: AsyncEngine
) -> None:
    await store.update_block("notes", "a change of another kind", user_id=USER)
    appended = await asyncio.gather(
        *(
            store.threads.append(f"t{n % 2}", {"n": n}, from_id="a", to_id="b", user_id=USER)
            for n in range(20)
        )
    )
    log = await _log(engine)
    # One change per write, numbered 1..n with no gap or repeat.
    assert [seq for seq, *_ in log] == list(range(1, 22))
    appends = [(key, index) for _, kind, key, index in log if kind == ChangeKind.THREAD_APPENDED]
    assert sorted(appends) == sorted((s.thread_id, s.index) for s in appended)
    for thread_id in ("t0", "t1"):
        # Per thread the changes come in slot order: both counters are claimed in one order.
        assert [i for key, i in appends if key == thread_id] == list(range(10))
        assert await _counters(engine, thread_id) == (10, 21)
    # The change feed reads the same rows.
    feed = store.changes(user_id=USER, after="")
    got = [await anext(feed) for _ in range(21)]
    await feed.aclose()
    assert [(c.key, c.slot_index) for c in got][1:] == [(k, i) for _, _, k, i in log][1:]


async def test_a_failed_append_writes_nothing_and_names_the_constraint(
    store: MemoryStore, engine: AsyncEngine
) -> None:
    for n in range(2):
        await store.threads.append("t", {"n": n}, from_id="a", to_id="b", user_id=USER)
    # A counter behind its slots: the next append collides with slot 1 after its
    # thread counter (and, in the statement, nothing else yet) has moved.
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE threads SET next_slot_index = 1 WHERE user_id = :u AND thread_id = 't'"),
            {"u": storage_user_id(USER)},
        )
    before = (await _counters(engine, "t"), await _log(engine))
    with pytest.raises(Conflict) as raised:
        await store.threads.append("t", {"n": 2}, from_id="a", to_id="b", user_id=USER)
    assert raised.value.constraint == "pk_slots"
    assert raised.value.table == "slots"
    assert (await _counters(engine, "t"), await _log(engine)) == before
    assert [s.payload for s in await store.threads.get_thread("t", user_id=USER)] == [
        {"n": 0},
        {"n": 1},
    ]


async def test_the_wake_up_payload_is_the_tenants_hint(
    store: MemoryStore, engine: AsyncEngine, backend: str
) -> None:
    if not is_postgres(backend):
        pytest.skip("SQLite wakes other processes by file events, with no payload")
    heard: asyncio.Queue[str] = asyncio.Queue()
    async with engine.connect() as conn:
        listener = (await conn.get_raw_connection()).driver_connection
        assert listener is not None

        def hear(*args: Any) -> None:
            heard.put_nowait(args[-1])

        await listener.add_listener(CHANNEL, hear)
        await store.threads.append("t", "hello", from_id="a", to_id="b", user_id=USER)
        payload = await asyncio.wait_for(heard.get(), 60)  # a guard: it comes at the commit
        await listener.remove_listener(CHANNEL, hear)
    epoch = (await store.change_position(user_id=USER)).split(":")[0]
    assert payload == hint_of(epoch)


def test_the_statements_name_their_tenant() -> None:
    assert find_violations(APPEND_SQL, "postgresql") == ()
    for sql in (THREAD_SQL, SLOT_SQL, HEAD_SQL, CHANGE_SQL):
        assert find_violations(sql, "sqlite") == (), sql
