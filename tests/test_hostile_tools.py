"""Hostile tool calls, on both backends: the name and arguments come from a model, so
anything may arrive (wrong types, extra keys, huge or deeply nested values, JSON text
that is no object). Every call either succeeds with a JSON-ready result that reflects
exactly what was stored, or raises InvalidInput (NotFound for an unknown memory id)
and writes nothing."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from hostile_strategies import (
    HYPOTHESIS,
    around,
    attempt,
    datetimes,
    hostile_text,
    json_docs,
    mostly,
    odd_text,
    user_ids,
)
from hypothesis import given
from hypothesis import strategies as st

from memstore import Episode, Fact, MemoryStore, NotFound
from memstore.core.predicates import normalize_predicate
from memstore.services.agent import TOOL_SCHEMAS

NAMES = sorted(TOOL_SCHEMAS)
FIELDS = sorted({f for spec in TOOL_SCHEMAS.values() for f in spec["parameters"]["properties"]})


def nested(depth: int) -> Any:
    doc: Any = "leaf"
    for _ in range(depth):
        doc = [doc]
    return doc


def iso(moment: datetime) -> str:
    return moment.isoformat()


values = st.one_of(
    json_docs,
    hostile_text,
    around(2000),
    around(255),
    around(300),
    st.floats(),
    st.integers(),
    st.sampled_from(["all", "facts", "episodes", 20, 1.0, 5.0]),
    datetimes.map(iso),
    st.sampled_from(
        [
            "2026-01-01T00:00:00Z",
            "0001-01-01T00:00:00+05:00",
            "9999-12-31T23:59:59-05:00",
            "yesterday",
        ]
    ),
    st.sampled_from(["episode:", "fact:", "block:"]).flatmap(
        lambda kind: hostile_text.map(lambda key: kind + key)
    ),
)
argument_dicts = st.dictionaries(
    st.one_of(st.sampled_from(FIELDS), hostile_text), values, max_size=5
)


def as_json_text(doc: Any) -> str:
    return json.dumps(doc, default=repr)  # NaN / Infinity are written as the model might


arguments = st.one_of(
    argument_dicts,
    json_docs,
    st.none(),
    argument_dicts.map(as_json_text),
    json_docs.map(as_json_text),
    argument_dicts.map(lambda d: as_json_text(d).encode("utf-8", "surrogatepass")),
    hostile_text,
    st.binary(max_size=20),
    st.sampled_from(["", "null", "[]", "1", '"query"', "NaN", "{", "{}" * 2]),
)
names = st.one_of(
    st.sampled_from(NAMES),
    hostile_text,
    st.sampled_from([None, 1, b"search_memory", "Search_Memory"]),
)


async def seed(store: MemoryStore) -> None:
    await store.remember(Episode(user_id="victim", session_id="s", input="secret % _ ' plan"))
    await store.add_fact(
        Fact(user_id="victim", subject="victim", predicate="knows", object="secret")
    )
    await store.update_block("vault", "secret", user_id="victim")


def check_result(result: Any, user: str | None) -> None:
    assert isinstance(result, dict)
    text = json.dumps(result, allow_nan=False)  # goes back to the model as JSON
    if user != "victim":
        assert "secret" not in text, "another tenant's memory leaked"


@HYPOTHESIS
@given(name=names, args=arguments, user=user_ids)
async def test_any_call_succeeds_or_refuses_cleanly(
    db_url: str, store: MemoryStore, name: Any, args: Any, user: str | None
) -> None:
    await seed(store)
    also = (NotFound,) if name == "load_memory" else ()
    ok, result = await attempt(
        store, db_url, lambda: store.call_tool(name, args, user_id=user), also=also
    )
    if ok:
        check_result(result, user)


@HYPOTHESIS
@given(
    user=user_ids,
    kind=st.sampled_from(["episode:", "fact:", "block:"]),
    key=st.one_of(hostile_text, around(292), st.uuids().map(str), st.just("vault")),
)
async def test_load_memory_with_odd_ids(
    db_url: str, store: MemoryStore, user: str | None, kind: str, key: str
) -> None:
    await seed(store)
    ok, result = await attempt(
        store,
        db_url,
        lambda: store.call_tool("load_memory", {"id": kind + key}, user_id=user),
        also=(NotFound,),
    )
    if ok:  # only the victim's own block can be found by a guessed id
        assert user == "victim" and result["id"] == kind + key
        check_result(result, user)


@HYPOTHESIS
@given(
    user=user_ids,
    subject=mostly(odd_text, st.one_of(hostile_text, around(2000))),
    predicate=mostly(odd_text, st.one_of(hostile_text, around(255))),
    obj=mostly(odd_text, st.one_of(hostile_text, around(2000))),
    confidence=st.one_of(st.none(), mostly(st.floats(0, 1), st.floats()), st.integers(-1, 2)),
    valid_from=st.one_of(st.none(), mostly(datetimes.map(iso), hostile_text)),
    as_text=st.booleans(),
)
async def test_remember_fact_round_trips_or_refuses(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    subject: str,
    predicate: str,
    obj: str,
    confidence: float | None,
    valid_from: str | None,
    as_text: bool,
) -> None:
    args: dict[str, Any] = {"subject": subject, "predicate": predicate, "object": obj}
    if confidence is not None:
        args["confidence"] = confidence
    if valid_from is not None:
        args["valid_from"] = valid_from
    sent: Any = as_json_text(args) if as_text else args
    ok, made = await attempt(
        store, db_url, lambda: store.call_tool("remember_fact", sent, user_id=user)
    )
    if not ok:
        return
    check_result(made, user)
    kind, fact_id = made["id"].split(":", 1)
    assert kind == "fact"
    versions = await store.fact_history(user_id=user, fact_id=fact_id)
    (current,) = [v for v in versions if v.superseded_at is None]
    assert (current.user_id, current.subject, current.predicate) == (
        user,
        subject.strip(),
        normalize_predicate(predicate),
    )
    if made["change"] in ("added", "superseded"):  # else an earlier, equal fact was kept
        assert current.object == obj.strip()
        assert current.confidence == (1.0 if confidence is None else float(confidence))
        if valid_from is not None:
            assert current.valid_from == datetime.fromisoformat(valid_from)
    loaded = await store.call_tool("load_memory", {"id": made["id"]}, user_id=user)
    check_result(loaded, user)
    assert (loaded["subject"], loaded["object"]) == (current.subject, current.object)


@HYPOTHESIS
@given(
    user=user_ids,
    query=mostly(odd_text, st.one_of(hostile_text, around(2000))),
    kind=st.sampled_from(["all", "facts", "episodes"]),
    limit=st.integers(1, 20),
)
async def test_search_finds_only_the_callers_memory(
    db_url: str, store: MemoryStore, user: str | None, query: str, kind: str, limit: int
) -> None:
    await seed(store)
    ok, found = await attempt(
        store,
        db_url,
        lambda: store.call_tool(
            "search_memory",
            {"query": query + " secret", "kind": kind, "limit": limit},
            user_id=user,
        ),
    )
    if ok:
        check_result(found, user)
        assert len(found["results"]) <= 2 * limit


@pytest.mark.parametrize(
    "name",
    [
        ["search_memory"],
        {"search_memory": 1},
        {1},
        None,
        1,
        b"search_memory",
        "search_memory\x00",
        "\ud800",
    ],
    ids=["list", "dict", "set", "none", "int", "bytes", "nul", "surrogate"],
)
async def test_unknown_tool_names_are_invalid_input(
    db_url: str, store: MemoryStore, name: Any
) -> None:
    ok, _ = await attempt(
        store, db_url, lambda: store.call_tool(name, {"query": "x"}, user_id="alice")
    )
    assert not ok


DEEP = 100_000


@pytest.mark.parametrize(
    "args",
    [
        pytest.param("[" * DEEP, id="array-text"),
        pytest.param('{"query": ' + "[" * DEEP, id="value-text"),
        pytest.param('{"query": ' + '{"a": ' * DEEP, id="object-text"),
        pytest.param(("[" * DEEP).encode(), id="bytes"),
    ],
)
async def test_deeply_nested_json_text_is_invalid_input(
    db_url: str, store: MemoryStore, args: Any
) -> None:
    ok, _ = await attempt(
        store, db_url, lambda: store.call_tool("search_memory", args, user_id="a")
    )
    assert not ok


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"query": "x", 1: "int key", "b": 2}, id="int-and-str"),
        pytest.param({"query": "x", None: 1, (1, 2): 2}, id="none-and-tuple"),
        pytest.param({"query": "x", 2.5: 1, "z": 1}, id="float-and-str"),
    ],
)
async def test_non_string_argument_keys_are_invalid_input(
    db_url: str, store: MemoryStore, args: Any
) -> None:
    ok, _ = await attempt(
        store, db_url, lambda: store.call_tool("search_memory", args, user_id="a")
    )
    assert not ok


@pytest.mark.parametrize(
    "name, args",
    [
        pytest.param("search_memory", {"query": nested(DEEP)}, id="deep-value"),
        pytest.param("load_memory", {"id": nested(DEEP)}, id="deep-id"),
        pytest.param("search_memory", {"query": "x", "kind": nested(DEEP)}, id="deep-enum"),
        pytest.param(nested(DEEP), {"query": "x"}, id="deep-name"),
    ],
)
async def test_deeply_nested_values_are_invalid_input(
    db_url: str, store: MemoryStore, name: Any, args: Any
) -> None:
    # The error message quotes the value: that must not recurse through it.
    ok, _ = await attempt(store, db_url, lambda: store.call_tool(name, args, user_id="a"))
    assert not ok


async def test_predicate_that_grows_when_normalised_is_invalid_input(
    db_url: str,
    store: MemoryStore,
) -> None:
    # "İ".lower() is two characters: 200 of them normalise to a 399-character name,
    # longer than the predicate column holds.
    ok, _ = await attempt(
        store,
        db_url,
        lambda: store.call_tool(
            "remember_fact",
            {"subject": "a", "predicate": "İ" * 200, "object": "b"},
            user_id="alice",
        ),
    )
    assert not ok
    ok, _ = await attempt(
        store,
        db_url,
        lambda: store.add_fact(Fact(user_id="alice", subject="a", predicate="İ" * 200, object="b")),
    )
    assert not ok
    made = await store.call_tool(
        "remember_fact", {"subject": "a", "predicate": "İ" * 128, "object": "b"}, user_id="alice"
    )
    loaded = await store.call_tool("load_memory", {"id": made["id"]}, user_id="alice")
    assert loaded["predicate"] == normalize_predicate("İ" * 128)
    assert len(loaded["predicate"]) == 255
