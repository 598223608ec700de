"""Memory tools: schemas, argument validation, tenant-scoped execution, on both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from jsonschema import Draft202012Validator

from memstore import ANONYMOUS, Episode, Fact, InvalidInput, MemoryStore, NotFound
from memstore.services.agent import TOOL_SCHEMAS, tool_definitions, validate_arguments

# ---- definitions ------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_tool_schemas_are_valid_json_schema(style: str) -> None:
    tools = tool_definitions(style)  # type: ignore[arg-type]
    assert {(t["function"] if style == "openai" else t)["name"] for t in tools} == {
        "search_memory",
        "load_memory",
        "remember_fact",
    }
    for tool in tools:
        if style == "openai":
            assert tool["type"] == "function"
            spec, schema = tool["function"], tool["function"]["parameters"]
        else:
            spec, schema = tool, tool["input_schema"]
        assert spec["description"]
        assert set(spec) <= {"name", "description", "parameters", "input_schema"}
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        json.dumps(tool)  # plain data


def test_schema_meta_check_can_fail() -> None:
    from jsonschema.exceptions import SchemaError

    broken = json.loads(json.dumps(TOOL_SCHEMAS["search_memory"]["parameters"]))
    broken["properties"]["limit"]["type"] = "int"
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema(broken)


GOOD = {
    "search_memory": {"query": "paris", "kind": "facts", "limit": 3},
    "load_memory": {"id": "episode:abc"},
    "remember_fact": {
        "subject": "alice",
        "predicate": "lives_in",
        "object": "Paris",
        "confidence": 0.5,
        "valid_from": "2026-01-01T00:00:00Z",
    },
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_builtin_validation_agrees_with_jsonschema_on_good_input(name: str) -> None:
    schema = TOOL_SCHEMAS[name]["parameters"]
    Draft202012Validator(schema).validate(GOOD[name])
    assert validate_arguments(name, GOOD[name]) == GOOD[name]
    assert validate_arguments(name, json.dumps(GOOD[name])) == GOOD[name]


BAD = [
    ("search_memory", {}, "missing required argument 'query'"),
    ("search_memory", {"query": "x", "limit": "ten"}, "'limit' must be of type integer"),
    ("search_memory", {"query": "x", "limit": 0}, "'limit' must be between 1 and 20"),
    ("search_memory", {"query": "x", "limit": 99}, "'limit' must be between 1 and 20"),
    ("search_memory", {"query": "x", "limit": True}, "'limit' must be of type integer"),
    ("search_memory", {"query": "x", "kind": "blocks"}, "'kind' must be one of"),
    ("search_memory", {"query": "   "}, "'query' must not be empty"),
    ("search_memory", {"query": "x", "colour": 1}, "unexpected argument 'colour'"),
    ("load_memory", {"id": "abc"}, "'id' must look like 'episode:<id>'"),
    ("load_memory", {"id": "m0"}, "or a context's handle 'm<n>'"),
    ("load_memory", {"id": "m3 "}, "or a context's handle 'm<n>'"),
    ("load_memory", {"id": 7}, "'id' must be of type string"),
    ("remember_fact", {"subject": "a", "predicate": "b"}, "missing required argument 'object'"),
    (
        "remember_fact",
        {"subject": "a", "predicate": "b", "object": "c", "confidence": 2},
        "'confidence' must be between 0 and 1",
    ),
    (
        "remember_fact",
        {"subject": "a", "predicate": "b", "object": "c", "valid_from": "yesterday"},
        "'valid_from' must be an ISO 8601",
    ),
    (
        "remember_fact",
        {"subject": "a", "predicate": "b", "object": "c", "valid_from": "2026-01-01T00:00:00"},
        "needs a UTC offset",
    ),
    ("search_memory", "{not json", "arguments are not valid JSON"),
    ("search_memory", ["query"], "arguments must be a JSON object"),
    ("forget_everything", {}, "unknown tool 'forget_everything'"),
]


@pytest.mark.parametrize("ref", ["m1", "m42", "episode:abc", "block:persona"])
def test_load_memory_takes_a_handle_or_an_id(ref: str) -> None:
    schema = TOOL_SCHEMAS["load_memory"]["parameters"]
    assert validate_arguments("load_memory", {"id": ref}) == {"id": ref}
    assert Draft202012Validator(schema).is_valid({"id": ref})


@pytest.mark.parametrize(("name", "args", "message"), BAD)
def test_bad_arguments_give_clear_errors(name: str, args: object, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_arguments(name, args)
    assert message in str(caught.value)
    if name in TOOL_SCHEMAS and isinstance(args, dict) and "valid_from" not in args:
        # The published schema rejects the same input (a model sees the same rules).
        assert not Draft202012Validator(TOOL_SCHEMAS[name]["parameters"]).is_valid(args)


# ---- execution against both backends -----------------------------------------------------


async def test_bad_call_writes_nothing(store: MemoryStore) -> None:
    with pytest.raises(InvalidInput, match="confidence"):
        await store.call_tool(
            "remember_fact",
            {"subject": "a", "predicate": "b", "object": "c", "confidence": -1},
            user_id="alice",
        )
    assert await store.fact_history(user_id="alice") == []
    with pytest.raises(InvalidInput, match="user_id"):
        await store.call_tool("search_memory", {"query": "x"}, user_id="")


async def test_search_load_remember_round_trip(store: MemoryStore) -> None:
    ep = await store.remember(
        Episode(user_id="alice", session_id="s", input="I moved to Lyon", output="Lyon is lovely")
    )
    await store.update_block("persona", "Alice, a botanist.", user_id="alice")
    made = await store.call_tool(
        "remember_fact",
        '{"subject": "alice", "predicate": "lives_in", "object": "Lyon", '
        '"valid_from": "2026-01-01T00:00:00+00:00"}',
        user_id="alice",
    )
    assert made["change"] == "added" and made["id"].startswith("fact:")

    found = await store.call_tool("search_memory", {"query": "lyon"}, user_id="alice")
    ids = [r["id"] for r in found["results"]]
    assert made["id"] in ids and f"episode:{ep}" in ids
    only_facts = await store.call_tool(
        "search_memory", {"query": "lyon", "kind": "facts"}, user_id="alice"
    )
    assert {r["kind"] for r in only_facts["results"]} == {"fact"}

    episode = await store.call_tool("load_memory", {"id": f"episode:{ep}"}, user_id="alice")
    assert episode["input"] == "I moved to Lyon" and episode["output"] == "Lyon is lovely"
    fact = await store.call_tool("load_memory", {"id": made["id"]}, user_id="alice")
    assert (fact["subject"], fact["predicate"], fact["object"]) == ("alice", "lives_in", "Lyon")
    assert fact["current"] is True
    assert fact["valid_from"].startswith("2026-01-01T00:00:00")
    block = await store.call_tool("load_memory", {"id": "block:persona"}, user_id="alice")
    assert block["content"] == "Alice, a botanist."
    json.dumps([found, episode, fact, block])  # tool results go back to the model as JSON

    moved = await store.call_tool(
        "remember_fact",
        {"subject": "alice", "predicate": "lives_in", "object": "Nice"},
        user_id="alice",
    )
    assert moved["change"] == "superseded"
    now = await store.recall_facts("lives_in", user_id="alice")
    assert [f.object for f in now] == ["Nice"]


async def test_load_memory_of_another_tenant_is_not_found(store: MemoryStore) -> None:
    ep = await store.remember(Episode(user_id="mallory", session_id="s", input="SECRET plan"))
    fact = await store.add_fact(
        Fact(user_id="mallory", subject="m", predicate="knows", object="SECRET")
    )
    await store.update_block("vault", "SECRET", user_id="mallory")
    for memory_id in (f"episode:{ep}", f"fact:{fact}", "block:vault"):
        for intruder in ("alice", ANONYMOUS):
            with pytest.raises(NotFound) as caught:
                await store.call_tool("load_memory", {"id": memory_id}, user_id=intruder)
            assert "SECRET" not in str(caught.value)
        owned = await store.call_tool("load_memory", {"id": memory_id}, user_id="mallory")
        assert "SECRET" in json.dumps(owned)
    found = await store.call_tool("search_memory", {"query": "secret plan"}, user_id="alice")
    assert found == {"results": []}


async def test_load_memory_of_a_superseded_fact_says_so(store: MemoryStore) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    old = await store.add_fact(
        Fact(user_id="u", subject="u", predicate="lives_in", object="Rome", valid_from=t0)
    )
    await store.retract_fact(old, user_id="u")
    loaded = await store.call_tool("load_memory", {"id": f"fact:{old}"}, user_id="u")
    assert loaded["object"] == "Rome" and loaded["current"] is False
    with pytest.raises(NotFound):
        await store.call_tool("load_memory", {"id": "fact:no-such-fact"}, user_id="u")
