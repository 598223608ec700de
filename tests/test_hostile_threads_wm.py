"""Hostile input to the thread buffer and working memory, on both backends: every call
either succeeds and round-trips exactly, or raises InvalidInput and writes nothing."""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import json
from datetime import datetime
from typing import Any

import pytest
from conftest import table_counts
from hostile_strategies import (
    HYPOTHESIS,
    any_text,
    attempt,
    datetimes,
    hostile_text,
    identifiers,
    json_docs,
    mostly,
    odd_text,
    user_ids,
    valid_json,
)
from hypothesis import given
from hypothesis import strategies as st

from memstore import InvalidInput, MemoryStore, NotFound, TaskState
from memstore.services.limits import MAX_DURATION_SECONDS

_scope_counter = itertools.count()


def same_json(a: Any, b: Any) -> bool:
    """Equal values with equal JSON types (a float must not come back as an int).

    -0.0 and 0.0 count as the same: Postgres reads -0.0 back as 0.0 (documented).
    """

    def text(doc: Any) -> str:
        return json.dumps(doc, sort_keys=True).replace("-0.0", "0.0")

    return bool(a == b) and text(a) == text(b)


# ---- threads -------------------------------------------------------------------------------


@HYPOTHESIS
@given(
    user=user_ids,
    thread=identifiers,
    from_id=identifiers,
    to_id=identifiers,
    own_name=st.one_of(st.none(), identifiers),
    payload=json_docs,
    self_call=mostly(st.booleans(), st.sampled_from([0, 1, "true", None])),
    usage=any_text,
    nudge=mostly(any_text, st.integers()),
)
async def test_append_round_trips_or_refuses(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    thread: str,
    from_id: str,
    to_id: str,
    own_name: str | None,
    payload: Any,
    self_call: Any,
    usage: str,
    nudge: Any,
) -> None:
    before = await table_counts(db_url)
    ok, slot = await attempt(
        store,
        db_url,
        lambda: store.threads.append(
            thread,
            payload,
            from_id=from_id,
            to_id=to_id,
            user_id=user,
            own_name=own_name,
            is_self_call=self_call,
            usage_instructions=usage,
            todo_nudge=nudge,
        ),
    )
    if not ok:
        return
    assert (await table_counts(db_url))["slots"] == before["slots"] + 1
    meta = slot.metadata
    assert (
        meta.thread_id,
        meta.from_id,
        meta.to_id,
        meta.own_name,
        meta.is_self_call,
        meta.usage_instructions,
        meta.todo_nudge,
        meta.user_id,
        meta.payload_type,
    ) == (thread, from_id, to_id, own_name, self_call, usage, nudge, user, type(payload).__name__)
    assert same_json(slot.payload, payload)
    stored = await store.threads.get_thread(thread, user_id=user)
    assert stored[-1] == slot and same_json(stored[-1].payload, payload)
    assert stored[-1].index == len(stored) - 1
    assert slot in await store.threads.get_by_type(thread, slot.payload_type, user_id=user)
    assert slot in await store.threads.get_from(thread, from_id, user_id=user)
    assert await store.threads.get_slice(thread, -1, user_id=user) == [slot]


@HYPOTHESIS
@given(
    user=user_ids,
    thread=identifiers,
    payload_type=identifiers,
    from_id=identifiers,
    start=mostly(
        st.one_of(st.none(), st.integers(-5, 5), st.integers(-(2**70), 2**70)),
        st.sampled_from([True, 1.0, "0"]),
    ),
    end=mostly(
        st.one_of(st.none(), st.integers(-5, 5), st.integers(-(2**70), 2**70)),
        st.sampled_from([False, 2.0, "2"]),
    ),
)
async def test_thread_reads_and_delete_stay_in_their_thread(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    thread: str,
    payload_type: str,
    from_id: str,
    start: Any,
    end: Any,
) -> None:
    # The neighbours: same tenant other thread, other tenant same thread id (if valid).
    await store.threads.append("other", {"n": 1}, from_id="a", to_id="b", user_id="victim")
    await attempt(
        store,
        db_url,
        lambda: store.threads.append(thread, {"n": 2}, from_id="a", to_id="b", user_id="victim"),
    )
    for i in range(3):
        await attempt(
            store,
            db_url,
            lambda i=i: store.threads.append(
                thread, {"i": i}, from_id="a", to_id="b", user_id=user
            ),
        )
    tenant = None if user is None else user
    reads = [
        lambda: store.threads.get_thread(thread, user_id=user),
        lambda: store.threads.get_by_type(thread, payload_type, user_id=user),
        lambda: store.threads.get_from(thread, from_id, user_id=user),
        lambda: store.threads.get_slice(thread, start, end, user_id=user),
    ]
    results = []
    for read in reads:
        ok, found = await attempt(store, db_url, read)
        results.append(found if ok else None)
        for slot in found or []:
            assert slot.metadata.user_id == tenant and slot.thread_id == thread, "leak"
    everything, by_type, by_from, sliced = results
    if everything is not None:
        if by_type is not None:
            assert by_type == [s for s in everything if s.payload_type == payload_type]
        if by_from is not None:
            assert by_from == [s for s in everything if s.from_id == from_id]
        if sliced is not None:
            assert sliced == everything[start:end]
    other_before = await table_counts(db_url, "victim")
    ok, removed = await attempt(
        store, db_url, lambda: store.threads.delete_thread(thread, user_id=user)
    )
    if ok:
        assert removed == bool(everything)
        assert await store.threads.get_thread(thread, user_id=user) == []
    if thread != "other" or user != "victim":
        assert await table_counts(db_url, "victim") == other_before


async def test_dataclass_payloads_round_trip_or_refuse(db_url: str, store: MemoryStore) -> None:
    @dataclasses.dataclass
    class Note:
        text: str
        tags: Any

    good = Note(text="'); DROP TABLE slots; -- % _ \\", tags=["é", {"k": 1.0}])
    slot = await store.threads.append("t", good, from_id="a", to_id="b", user_id="u")
    assert slot.payload_type == "Note"
    assert same_json(slot.payload, dataclasses.asdict(good))
    (back,) = await store.threads.get_by_type("t", "Note", user_id="u")
    assert back == slot
    for bad in (
        Note(text="a\x00b", tags=[]),
        Note(text="a", tags=(1, 2)),
        Note(text="a", tags={1: "int key"}),
        Note(text="\ud800", tags=None),
        Note,
    ):
        before = await table_counts(db_url)
        with pytest.raises(InvalidInput):
            await store.threads.append("t", bad, from_id="a", to_id="b", user_id="u")
        assert await table_counts(db_url) == before


@pytest.mark.parametrize(
    "ttl",
    [
        1e12,
        1e300,
        float("inf"),
        float("nan"),
        0,
        -1,
        True,
        "3600",
        pytest.param(10**400, id="huge"),
    ],
)
async def test_gc_refuses_absurd_idle_ttls(db_url: str, store: MemoryStore, ttl: Any) -> None:
    await store.threads.append("t", 1, from_id="a", to_id="b", user_id="u")
    before = await table_counts(db_url)
    with pytest.raises(InvalidInput):
        await store.gc(user_id="u", thread_idle_ttl_seconds=ttl)
    with pytest.raises(InvalidInput):
        await store.gc_all_tenants(thread_idle_ttl_seconds=ttl)
    assert await table_counts(db_url) == before


@pytest.mark.parametrize(
    "ttl", [1e12, 1e300, float("inf"), 0, -1, pytest.param(10**400, id="huge")]
)
async def test_working_memory_refuses_absurd_ttls(
    db_url: str, store: MemoryStore, ttl: Any
) -> None:
    before = await table_counts(db_url)
    with pytest.raises(InvalidInput):
        await store.working_memory(user_id="u", session_id="s").set("k", 1, ttl_seconds=ttl)
    with pytest.raises(InvalidInput):
        await store.working_memory(user_id="u", session_id="s", default_ttl_seconds=ttl).set("k", 1)
    assert await table_counts(db_url) == before
    # The longest accepted TTL still works and keeps the value.
    wm = store.working_memory(user_id="u", session_id="s")
    await wm.set("k", 1, ttl_seconds=MAX_DURATION_SECONDS)
    assert await wm.get("k") == 1


# ---- working memory: keys ---------------------------------------------------------------

scope_ids = st.one_of(st.none(), identifiers)
ttls = mostly(
    st.sampled_from([None, 3600, 86_400.5, 1e9, MAX_DURATION_SECONDS]),
    st.sampled_from([1e12, 1e300, 10**400, float("inf"), float("nan"), 0, -5, True, "60"]),
)


def open_wm(
    store: MemoryStore,
    user: str | None,
    project: str | None,
    agent: str | None,
    session: str | None,
    **kw: Any,
) -> Any:
    return store.working_memory(
        user_id=user, project_id=project, agent_id=agent, session_id=session, **kw
    )


@HYPOTHESIS
@given(
    user=user_ids,
    project=scope_ids,
    agent=scope_ids,
    session=scope_ids,
    key=mostly(identifiers, hostile_text.map(lambda s: "_" + s)),
    value=json_docs,
    ttl=ttls,
    default_ttl=ttls,
)
async def test_set_round_trips_or_refuses(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    project: str | None,
    agent: str | None,
    session: str | None,
    key: str,
    value: Any,
    ttl: Any,
    default_ttl: Any,
) -> None:
    async def set_it() -> Any:
        wm = open_wm(store, user, project, agent, session, default_ttl_seconds=default_ttl)
        await wm.set(key, value, ttl_seconds=ttl)
        return wm

    ok, wm = await attempt(store, db_url, set_it)
    if not ok:
        return
    assert same_json(await wm.get(key, default=object()), value)
    assert await wm.exists(key)
    assert key in await wm.list_keys("*")
    assert same_json((await wm.get_all())[key], value)
    # The same scope opened again sees it; a scope differing in one level does not.
    again = open_wm(store, user, project, agent, session)
    assert same_json(await again.get(key), value)
    for other in (
        {"project": (project or "") + "x"},
        {"agent": (agent or "") + "x"},
        {"session": (session or "") + "x"},
    ):
        levels = {"project": project, "agent": agent, "session": session, **other}
        try:
            neighbour = open_wm(store, user, levels["project"], levels["agent"], levels["session"])
        except InvalidInput:  # the extended id became too long
            continue
        assert await neighbour.get(key, "absent") == "absent"
    assert await wm.delete(key) is True
    assert await wm.get(key, "absent") == "absent"


KEY_ALPHABET = st.sampled_from([*list("ab%_[]*?!^-\\/.'"), "é", "\u200b"])
odd_keys = st.lists(KEY_ALPHABET, min_size=1, max_size=5).map("".join)
odd_patterns = st.lists(KEY_ALPHABET, min_size=1, max_size=6).map("".join)


async def check_list_keys(
    store: MemoryStore, db_url: str, keys: list[str], patterns: list[str]
) -> None:
    wm = store.working_memory(user_id="alice", session_id=f"s{next(_scope_counter)}")
    stored: set[str] = set()
    for key in keys:
        ok, _ = await attempt(store, db_url, lambda key=key: wm.set(key, key))
        if ok:
            stored.add(key)
        else:
            assert key.startswith("_") or not key.strip()
    for pattern in patterns:
        # Keys of another tenant and of another scope that the pattern matches must
        # never be listed.
        decoy = "a" + pattern
        await store.working_memory(user_id="mallory", session_id=wm.scope.scope_id).set(decoy, 1)
        await store.working_memory(user_id="alice", session_id="elsewhere").set(decoy, 1)
        try:
            listed = await wm.list_keys(pattern)
        except InvalidInput:  # read-only: nothing to count
            assert not pattern.strip()
            continue
        assert listed == sorted(k for k in stored if fnmatch.fnmatchcase(k, pattern)), pattern


@HYPOTHESIS
@given(keys=st.lists(odd_keys, max_size=8), patterns=st.lists(odd_patterns, max_size=3))
async def test_list_keys_follows_fnmatch(
    store: MemoryStore, db_url: str, keys: list[str], patterns: list[str]
) -> None:
    await check_list_keys(store, db_url, keys, patterns)


async def test_list_keys_with_sql_and_glob_metacharacters(store: MemoryStore, db_url: str) -> None:
    keys = [
        "a",
        "ab",
        "a%",
        "a_",
        "a[",
        "a]",
        "a*",
        "a?",
        "a\\",
        "a\\%",
        "a'",
        "[a]",
        "%",
        "x' OR '1'='1",
        "é",
        "e\u0301",
        "\u200ba",
    ]
    await check_list_keys(
        store,
        db_url,
        keys,
        [
            "*",
            "%",
            "_",
            "a%",
            "a_",
            "a_%",
            "a[",
            "a[]",
            "[!a]*",
            "[[]*",
            "a[*]",
            "a\\*",
            "a\\%",
            "*'",
            "' OR '1'='1",
            "x' OR '1'='1",
            "*\u0301",
            "?",
            "a?",
            "[a-z]",
            "*]",
        ],
    )


@pytest.mark.parametrize("pattern", ["", "   ", "a\x00", "\ud800", "*" * 1001, 7, None, ["*"]])
async def test_list_keys_refuses_unusable_patterns(store: MemoryStore, pattern: Any) -> None:
    wm = store.working_memory(user_id="alice", session_id="s")
    await wm.set("a", 1)
    with pytest.raises(InvalidInput):
        await wm.list_keys(pattern)


# ---- working memory: scratchpad, task state, checkpoints ----------------------------------


@HYPOTHESIS
@given(
    user=user_ids, notes=st.lists(mostly(any_text, st.sampled_from([1, None, b"x"])), max_size=4)
)
async def test_scratchpad_round_trips_or_refuses(
    db_url: str, store: MemoryStore, user: str | None, notes: list[Any]
) -> None:
    ok, wm = await attempt(store, db_url, lambda: _wm(store, user))
    if not ok:
        return
    await wm.clear_scratchpad()
    kept = []
    for note in notes:
        ok, _ = await attempt(store, db_url, lambda note=note: wm.append_scratchpad(note))
        if ok:
            kept.append(note)
    assert await wm.get_scratchpad() == kept


async def _wm(store: MemoryStore, user: str | None) -> Any:
    return store.working_memory(user_id=user, session_id="scratch")


bad_numbers = st.one_of(
    st.integers(max_value=-1),
    st.floats(),
    st.sampled_from([True, "5", None, 10**400, -(10**400), float("nan")]),
)
counts = mostly(st.one_of(st.integers(0, 100), st.integers(0, 2**70)), bad_numbers)
percents = mostly(st.one_of(st.integers(0, 100), st.floats(0, 100)), bad_numbers)


@HYPOTHESIS
@given(
    user=user_ids,
    task_id=identifiers,
    task_type=hostile_text,
    description=any_text,
    status=mostly(odd_text, st.one_of(hostile_text, st.integers())),
    step=counts,
    total=counts,
    progress=percents,
    context=mostly(st.dictionaries(odd_text, valid_json, max_size=3), json_docs),
    started=datetimes,
    updated=datetimes,
)
async def test_task_state_round_trips_or_refuses(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    task_id: str,
    task_type: str,
    description: str,
    status: Any,
    step: Any,
    total: Any,
    progress: Any,
    context: Any,
    started: datetime,
    updated: datetime,
) -> None:
    wm = store.working_memory(user_id="alice" if user is None else "bob", session_id="task")
    state = TaskState(
        task_id=task_id,
        task_type=task_type,
        description=description,
        status=status,
        current_step=step,
        total_steps=total,
        progress_percent=progress,
        context=context,
        started_at=started,
        updated_at=updated,
    )
    ok, stored = await attempt(store, db_url, lambda: wm.set_task_state(state))
    if not ok:
        return
    back = await wm.get_task_state()
    assert back == stored
    assert (
        back.task_id,
        back.task_type,
        back.description,
        back.status,
        back.current_step,
        back.total_steps,
        back.progress_percent,
        back.started_at,
    ) == (task_id, task_type, description, status, step, total, progress, started)
    assert same_json(back.context, context)


@HYPOTHESIS
@given(
    step=st.one_of(st.none(), counts),
    progress=st.one_of(st.none(), percents),
    status=st.one_of(st.none(), mostly(odd_text, st.one_of(hostile_text, st.integers()))),
)
async def test_task_progress_updates_or_refuses(
    db_url: str, store: MemoryStore, step: Any, progress: Any, status: Any
) -> None:
    wm = store.working_memory(user_id="alice", session_id="progress")
    await wm.set_task_state(TaskState(task_id="t", current_step=1, progress_percent=10.0))
    ok, state = await attempt(
        store,
        db_url,
        lambda: wm.update_task_progress(
            current_step=step, progress_percent=progress, status=status
        ),
    )
    if not ok:
        return
    assert await wm.get_task_state() == state
    if step is not None:
        assert state.current_step == step
    if progress is not None:
        assert state.progress_percent == float(min(100.0, max(0.0, progress)))
    if status is not None:
        assert state.status == status


@HYPOTHESIS
@given(
    values=st.dictionaries(identifiers, json_docs, max_size=4),
    description=any_text,
    checkpoint_id=st.one_of(identifiers, st.uuids().map(str)),
)
async def test_checkpoints_restore_exactly_or_refuse(
    db_url: str, store: MemoryStore, values: dict[str, Any], description: str, checkpoint_id: str
) -> None:
    wm = store.working_memory(user_id="alice", session_id=f"c{next(_scope_counter)}")
    await wm.append_scratchpad("note")
    for key, value in values.items():
        await attempt(
            store, db_url, lambda key=key, value=value: wm.set(key, value, ttl_seconds=86_400)
        )
    snapshot = await wm.get_all()
    ok, made = await attempt(store, db_url, lambda: wm.create_checkpoint(description))
    if not ok:
        return
    await wm.clear()
    await wm.set("later", "x")
    for call in (
        lambda: wm.restore_checkpoint(checkpoint_id),
        lambda: wm.delete_checkpoint(checkpoint_id),
    ):
        ok, result = await attempt(store, db_url, call, also=(NotFound,))
        assert not ok or result is False  # an unknown id is never some other checkpoint
    await wm.restore_checkpoint(made)
    restored = await wm.get_all()
    assert restored.keys() == snapshot.keys()
    assert all(same_json(restored[k], snapshot[k]) for k in snapshot)
    assert await wm.get_scratchpad() == ["note"]
    (listed,) = await wm.list_checkpoints()
    assert (listed["id"], listed["description"]) == (made, description)


@pytest.mark.parametrize(
    "progress, expected",
    [(10**400, 100.0), (-(10**400), 0.0), (float("inf"), 100.0), (50, 50.0)],
    ids=["huge", "-huge", "inf", "50"],
)
async def test_task_progress_clamps_any_number(
    store: MemoryStore, progress: Any, expected: float
) -> None:
    wm = store.working_memory(user_id="alice", session_id="clamp")
    await wm.set_task_state(TaskState(task_id="t"))
    state = await wm.update_task_progress(progress_percent=progress)
    assert state is not None and state.progress_percent == expected
    assert (await wm.get_task_state()) == state


@pytest.mark.parametrize("value", [-0.0, [1, {"x": -0.0}]], ids=["top", "nested"])
async def test_negative_zero_is_stored(store: MemoryStore, value: Any) -> None:
    # Documented normalisation (docs/guarantees.md): jsonb keeps numbers as numeric,
    # which has no -0, so Postgres reads -0.0 back as the equal 0.0.
    await store.working_memory(user_id="u", session_id="s").set("k", value)
    back = await store.working_memory(user_id="u", session_id="s").get("k")
    assert same_json(back, value)
    slot = await store.threads.append("t", value, from_id="a", to_id="b", user_id="u")
    assert same_json((await store.threads.get_thread("t", user_id="u"))[-1].payload, slot.payload)


SCALARS = [0.0, 1.0, 1e16, 2.5, 2**80, -(2**70), 10**20, 0, 7, 2.0**53 + 2, 1e308, 5e-324]


@pytest.mark.parametrize("value", SCALARS, ids=[repr(v) for v in SCALARS])
async def test_top_level_numbers_keep_type_and_value(store: MemoryStore, value: Any) -> None:
    # SQLite gives a column declared JSON numeric affinity: the text of a bare number
    # would be converted on storage (1.0 -> 1, 2**80 -> a lossy REAL).
    wm = store.working_memory(user_id="u", session_id="s")
    await wm.set("k", value)
    assert same_json(await wm.get("k"), value)
    assert same_json((await wm.get_all())["k"], value)
    slot = await store.threads.append("t", value, from_id="a", to_id="b", user_id="u")
    (back,) = await store.threads.get_slice("t", -1, user_id="u")
    assert back == slot and same_json(back.payload, value)
    checkpoint = await wm.create_checkpoint()
    await wm.set("k", "changed")
    await wm.restore_checkpoint(checkpoint)
    assert same_json(await wm.get("k"), value)
