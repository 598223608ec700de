"""Bad input raises a specific MemstoreError subclass and writes nothing."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest
from conftest import table_counts

from memstore import (
    Episode,
    Fact,
    InvalidInput,
    LimitExceeded,
    MemoryStore,
    NotFound,
    TenantRequired,
)

NAIVE = datetime(2026, 1, 1)
AWARE = datetime(2026, 1, 1, tzinfo=UTC)

Call = Callable[[MemoryStore], Awaitable[object]]


def ep(**kw: object) -> Episode:
    fields: dict[str, object] = {"user_id": "alice", "session_id": "s", "input": "hi"}
    fields.update(kw)
    return Episode(**fields)  # type: ignore[arg-type]


def fact(**kw: object) -> Fact:
    fields: dict[str, object] = {
        "user_id": "alice",
        "subject": "alice",
        "predicate": "likes",
        "object": "tea",
    }
    fields.update(kw)
    return Fact(**fields)  # type: ignore[arg-type]


CASES: dict[str, tuple[type[Exception], Call]] = {
    "empty episode": (InvalidInput, lambda s: s.remember(ep(input="", output="  "))),
    "oversize input": (InvalidInput, lambda s: s.remember(ep(input="x" * 100_001))),
    "naive occurred_at": (InvalidInput, lambda s: s.remember(ep(occurred_at=NAIVE))),
    "NUL in text": (InvalidInput, lambda s: s.remember(ep(input="a\x00b"))),
    "non-JSON metadata": (InvalidInput, lambda s: s.remember(ep(metadata={"x": object()}))),
    "NaN in metadata": (InvalidInput, lambda s: s.remember(ep(metadata={"x": math.nan}))),
    "tuple tool_calls": (InvalidInput, lambda s: s.remember(ep(tool_calls=({"a": 1},)))),
    "non-string key": (InvalidInput, lambda s: s.remember(ep(metadata={1: "x"}))),
    "empty user_id": (InvalidInput, lambda s: s.remember(ep(user_id=""))),
    "reserved user_id": (InvalidInput, lambda s: s.remember(ep(user_id="__reserved__"))),
    "no user_id": (TenantRequired, lambda s: s.remember(ep(user_id=None))),
    "control char user_id": (InvalidInput, lambda s: s.remember(ep(user_id="a\nb"))),
    "overlong user_id": (InvalidInput, lambda s: s.remember(ep(user_id="u" * 256))),
    "non-str user_id": (InvalidInput, lambda s: s.remember(ep(user_id=42))),
    "empty session": (InvalidInput, lambda s: s.remember(ep(session_id=""))),
    "batch with one bad": (InvalidInput, lambda s: s.remember_many([ep(), ep(input="")])),
    "not an episode": (InvalidInput, lambda s: s.remember({"input": "hi"})),  # type: ignore[arg-type]
    "empty fact object": (InvalidInput, lambda s: s.add_fact(fact(object=" "))),
    "fact predicate symbols": (InvalidInput, lambda s: s.add_fact(fact(predicate="!!"))),
    "confidence > 1": (InvalidInput, lambda s: s.add_fact(fact(confidence=1.5))),
    "confidence NaN": (InvalidInput, lambda s: s.add_fact(fact(confidence=math.nan))),
    "naive valid_from": (InvalidInput, lambda s: s.add_fact(fact(valid_from=NAIVE))),
    "valid_to before from": (
        InvalidInput,
        lambda s: s.add_fact(fact(valid_from=AWARE, valid_to=datetime(2025, 1, 1, tzinfo=UTC))),
    ),
    "naive valid_at": (InvalidInput, lambda s: s.recall_facts("x", user_id="a", valid_at=NAIVE)),
    "zero limit": (InvalidInput, lambda s: s.recall("x", user_id="a", limit=0)),
    "block name empty": (InvalidInput, lambda s: s.update_block("", "x", user_id="a")),
    "block over limit": (LimitExceeded, lambda s: s.update_block("p", "x" * 5001, user_id="a")),
    "block NUL": (InvalidInput, lambda s: s.update_block("p", "\x00", user_id="a")),
    "retract unknown": (NotFound, lambda s: s.retract_fact("nope", user_id="alice")),
    "naive forget before": (InvalidInput, lambda s: s.forget(user_id="alice", before=NAIVE)),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_bad_input_raises_and_writes_nothing(
    db_url: str, store: MemoryStore, case: str
) -> None:
    await store.remember(ep(input="baseline"))
    before = await table_counts(db_url)
    error, call = CASES[case]
    with pytest.raises(error) as raised:
        await call(store)
    assert str(raised.value)  # a message a person can act on
    assert await table_counts(db_url) == before
