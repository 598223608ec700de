"""Hostile input on both backends: every call round-trips exactly or raises InvalidInput
and writes nothing (row counts of every tenant table compared before and after)."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import ANONYMOUS, Episode, Fact, InvalidInput, MemoryStore
from memstore.core.predicates import normalize_predicate
from memstore.core.validation import (
    MAX_IDENTIFIER_CHARS,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    MAX_TEXT_CHARS,
)
from memstore.store import MAX_FACT_FIELD_CHARS
from tests.conftest import table_counts

HOSTILE_BITS = [
    "\x00",
    "\ud800",
    "\udfff",
    "\ud83d",
    "'",
    '"',
    ";",
    "--",
    "/*",
    "*/",
    "%",
    "_",
    "\\",
    "\\u0000",
    "\u202e",
    "\ufeff",
    "\u200b",
    "\U0001f600",
    "\uffff",
    "\ufffe",
    "\x7f",
    "\x1b",
    "\r\n",
    "\t",
    " ",
    "é",
    "e\u0301",
    "ß",
    "İ",
    "\U00010348",
    "'); DROP TABLE episodes; --",
    "' OR '1'='1",
    "$1",
    "::text",
    "E'\\x00'",
    "__anonymous__",
    "__",
    "NULL",
    "null",
]
hostile_char = st.one_of(st.characters(), st.sampled_from(HOSTILE_BITS))
hostile_text = st.lists(hostile_char, max_size=12).map("".join)


def around(limit: int) -> st.SearchStrategy[str]:
    """Strings of length limit-1 .. limit+1 with a random tail (multi-byte included)."""
    return st.tuples(st.integers(limit - 1, limit + 1), st.characters()).map(
        lambda nc: ("a" * nc[0])[:-1] + nc[1] if nc[0] else ""
    )


any_text = st.one_of(hostile_text, around(MAX_TEXT_CHARS), st.just(""))
identifiers = st.one_of(hostile_text, around(MAX_IDENTIFIER_CHARS), st.just("__x"))
user_ids = st.one_of(st.none(), identifiers)
offsets = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m)))
datetimes = st.one_of(
    st.datetimes(timezones=offsets),
    st.datetimes(),  # naive: refused
    st.sampled_from(
        [
            datetime.max.replace(tzinfo=timezone(timedelta(hours=-5))),
            datetime.min.replace(tzinfo=timezone(timedelta(hours=5))),
        ]
    ),
)
json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**80), 2**80),
    st.floats(),
    st.sampled_from([1e308, 5e-324, 1e16, -0.0, 1.5e-5, 2.0**53 + 2]),
    hostile_text,
)
json_docs = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=25,
)

HYPOTHESIS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


async def attempt(store: MemoryStore, url: str, call: Any) -> Any:
    """Run ``call``; return its result, or None after checking it wrote nothing to ``url``."""
    before = await table_counts(url)
    try:
        return await call()
    except InvalidInput:
        assert await table_counts(url) == before, "a refused call wrote rows"
        return None


@HYPOTHESIS
@given(
    user=user_ids,
    session=identifiers,
    text_in=any_text,
    text_out=any_text,
    meta=json_docs,
    tools=json_docs,
    occurred=datetimes,
)
async def test_remember_round_trips_or_refuses(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    session: str,
    text_in: str,
    text_out: str,
    meta: Any,
    tools: Any,
    occurred: datetime,
) -> None:
    episode = Episode(
        user_id=user,
        session_id=session,
        input=text_in,
        output=text_out,
        metadata={"m": meta},
        tool_calls=[tools],
        occurred_at=occurred,
    )
    before = await table_counts(db_url)
    episode_id = await attempt(store, db_url, lambda: store.remember(episode))
    if episode_id is None:
        return
    after = await table_counts(db_url)
    assert after["episodes"] == before["episodes"] + 1
    back = await store.get_episode(episode_id, user_id=user)
    assert back == episode  # every field, datetimes compared as instants
    assert back.occurred_at.utcoffset() == timedelta(0)
    assert json.dumps(back.metadata, sort_keys=True) == json.dumps(episode.metadata, sort_keys=True)


@HYPOTHESIS
@given(
    user=user_ids,
    subject=st.one_of(hostile_text, around(MAX_FACT_FIELD_CHARS)),
    predicate=st.one_of(hostile_text, around(MAX_IDENTIFIER_CHARS)),
    obj=hostile_text,
    valid_from=datetimes,
    confidence=st.floats(),
)
async def test_add_fact_round_trips_or_refuses(
    db_url: str,
    store: MemoryStore,
    user: str | None,
    subject: str,
    predicate: str,
    obj: str,
    valid_from: datetime,
    confidence: float,
) -> None:
    fact = Fact(
        user_id=user,
        subject=subject,
        predicate=predicate,
        object=obj,
        valid_from=valid_from,
        confidence=confidence,
    )
    # Examples share the store: an earlier example's fact with the same subject and
    # predicate would make this one a (documented) reinforcement or correction.
    with contextlib.suppress(InvalidInput):
        await store.forget(user_id=user)
    fact_id = await attempt(store, db_url, lambda: store.add_fact(fact))
    if fact_id is None:
        return
    versions = await store.fact_history(user_id=user, fact_id=fact_id)
    current = [v for v in versions if v.superseded_at is None]
    assert len(current) == 1
    (row,) = current
    # Documented normalisation: subject/object stripped, predicate snake_cased.
    assert (row.user_id, row.subject, row.predicate, row.object) == (
        user,
        subject.strip(),
        normalize_predicate(predicate),
        obj.strip(),
    )
    assert row.valid_from == valid_from
    assert row.confidence == confidence


@HYPOTHESIS
@given(user=user_ids, name=identifiers, content=any_text)
async def test_blocks_round_trip_or_refuse(
    db_url: str, store: MemoryStore, user: str | None, name: str, content: str
) -> None:
    block = await attempt(store, db_url, lambda: store.update_block(name, content, user_id=user))
    if block is None:
        return
    assert block.content == content and block.name == name
    (listed,) = [b for b in await store.working(user_id=user) if b.name == name]
    assert listed.content == content
    assert (await store.block_history(name, user_id=user))[-1].content == content


@HYPOTHESIS
@given(user=user_ids, text=st.one_of(hostile_text, around(10_000)), session=identifiers)
async def test_queries_never_fail_with_anything_but_invalid_input(
    db_url: str, store: MemoryStore, user: str | None, text: str, session: str
) -> None:
    await store.remember(Episode(user_id="victim", session_id="s", input="secret % _ '"))
    before = await table_counts(db_url)
    for call in (
        lambda: store.recall(text, user_id=user),
        lambda: store.recall_facts(text, user_id=user),
        lambda: store.session_messages(session, user_id=user),
        lambda: store.fact_history(user_id=user, subject=text),
        lambda: store.working(user_id=user),
        lambda: store.profile(user_id=user),
    ):
        result = await attempt(store, db_url, call)
        if isinstance(result, list):
            assert all(getattr(r, "user_id", user) == user for r in result), "tenant leak"
    assert await table_counts(db_url) == before


@HYPOTHESIS
@given(
    bad=st.sampled_from(
        [
            {"input": "\x00"},
            {"input": "\ud800"},
            {"session_id": ""},
            {"session_id": "a\nb"},
            {"metadata": {"k": float("nan")}},
            {"metadata": {1: "int key"}},
            {"tool_calls": [(1, 2)]},
            {"id": "x" * 37},
            {"occurred_at": datetime(2026, 1, 1)},
            {"user_id": "__reserved"},
            {"metadata": {"deep": "x" * MAX_JSON_BYTES}},
        ]
    ),
    position=st.integers(0, 4),
)
async def test_one_bad_episode_spoils_the_whole_batch(
    db_url: str, store: MemoryStore, bad: dict[str, Any], position: int
) -> None:
    batch = [Episode(user_id="alice", session_id="s", input=f"turn {i}") for i in range(5)]
    fields = {"user_id": "alice", "session_id": "s", "input": "ok", **bad}
    batch[position] = Episode(**fields)
    before = await table_counts(db_url)
    with pytest.raises(InvalidInput):
        await store.remember_many(batch)
    assert await table_counts(db_url) == before


def nested(depth: int) -> Any:
    doc: Any = "leaf"
    for _ in range(depth):
        doc = [doc]
    return doc


@pytest.mark.parametrize(
    "metadata, accepted",
    [
        ({"f": [1e308, 5e-324, 1e16, 1.5e-5, 2.0**60]}, True),  # jsonb must keep them floats
        ({"big": 2**80, "neg": -(2**70)}, True),
        ({"text": "\\u0000 is a literal backslash sequence"}, True),
        ({"d": nested(MAX_JSON_DEPTH - 1)}, True),
        ({"d": nested(MAX_JSON_DEPTH)}, False),
        ({"d": nested(50_000)}, False),
        ({"k\x00": 1}, False),
        ({"\ud800": 1}, False),
        ({"x": "y" * MAX_JSON_BYTES}, False),
    ],
)
async def test_json_edge_cases(
    db_url: str, store: MemoryStore, metadata: dict[str, Any], accepted: bool
) -> None:
    episode = Episode(user_id="alice", session_id="s", input="x", metadata=metadata)
    if not accepted:
        before = await table_counts(db_url)
        with pytest.raises(InvalidInput):
            await store.remember(episode)
        assert await table_counts(db_url) == before
        return
    back = await store.get_episode(await store.remember(episode), user_id="alice")
    assert back.metadata == metadata
    # Same types too: a float must not come back as an int.
    assert json.dumps(back.metadata, sort_keys=True) == json.dumps(metadata, sort_keys=True)


async def test_look_alike_tenants_stay_apart(store: MemoryStore) -> None:
    tenants = [
        "alice",
        "Alice",
        "alice ",
        " alice",
        "é",
        "e\u0301",
        "ali%",
        "ali_e",
        "alice'; --",
        "ALICE",
        "a\u200blice",
    ]
    for tenant in tenants:
        await store.remember(Episode(user_id=tenant, session_id="s", input=f"I am {tenant!r}"))
    await store.remember(Episode(user_id=ANONYMOUS, session_id="s", input="anonymous"))
    for tenant in [*tenants, ANONYMOUS]:
        (ep,) = await store.recall("", user_id=tenant, limit=50)
        assert ep.user_id == tenant
        assert (await store.profile(user_id=tenant)).episode_count == 1


async def test_far_datetimes_round_trip(store: MemoryStore) -> None:
    for when in (
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 3, 1, 12, 0, 0, 1, tzinfo=timezone(timedelta(hours=13))),
    ):
        episode = Episode(user_id="alice", session_id="s", input="x", occurred_at=when)
        back = await store.get_episode(await store.remember(episode), user_id="alice")
        assert back.occurred_at == when
