"""Hypothesis strategies and helpers shared by the hostile-input tests of the thread
buffer, working memory and agent tools (the episode/fact/block ones keep their own)."""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import Any

from conftest import table_counts
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from memstore import InvalidInput, MemoryStore
from memstore.validation import MAX_IDENTIFIER_CHARS, MAX_TEXT_CHARS

__all__ = [
    "HOSTILE_BITS", "HYPOTHESIS", "any_text", "around", "attempt", "datetimes",
    "hostile_text", "identifiers", "json_docs", "user_ids",
]

HOSTILE_BITS = [
    "\x00", "\ud800", "\udfff", "'", '"', ";", "--", "/*", "%", "_", "\\", "[", "]", "*", "?",
    "!", "^", "\\u0000", "\u202e", "\ufeff", "\u200b", "\u2028", "\x85", "\U0001f600", "\uffff",
    "\x7f", "\x1b", "\r\n", "\t", " ", "é", "e\u0301", "İ", "'); DROP TABLE slots; --",
    "' OR '1'='1", "$1", "::jsonb", "__anonymous__", "__", "_", "NULL", "null", "{}", "[]",
]
hostile_char = st.one_of(st.characters(), st.sampled_from(HOSTILE_BITS))
hostile_text = st.lists(hostile_char, max_size=10).map("".join)


def around(limit: int) -> st.SearchStrategy[str]:
    """Strings of length limit-1 .. limit+1 ending in a random character."""
    return st.tuples(st.integers(limit - 1, limit + 1), st.characters()).map(
        lambda nc: ("a" * nc[0])[:-1] + nc[1] if nc[0] else ""
    )


any_text = st.one_of(hostile_text, around(MAX_TEXT_CHARS), st.just(""))
identifiers = st.one_of(hostile_text, around(MAX_IDENTIFIER_CHARS))
user_ids = st.one_of(st.none(), identifiers)
offsets = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m)))
datetimes = st.one_of(st.datetimes(timezones=offsets), st.datetimes())
json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(2**80), 2**80), st.floats(),
    st.sampled_from([1e308, 5e-324, 1e16, -0.0, 1.5e-5, 2.0**53 + 2]), hostile_text,
)
json_docs = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4),
        st.tuples(inner),  # not JSON: must be refused, never stored as a list
    ),
    max_leaves=20,
)

HYPOTHESIS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


async def attempt(store: MemoryStore, call: Any, *, also: tuple[type[Exception], ...] = ()
                  ) -> tuple[bool, Any]:
    """(True, result) of ``call``; or (False, None) after checking that it raised
    InvalidInput (or one of ``also``) and wrote nothing to any tenant table."""
    await store.access_tracker.flush()  # buffered access counts must not blur the counts
    before = await table_counts(store)
    try:
        return True, await call()
    except (InvalidInput, *also):
        await store.access_tracker.flush()
        assert await table_counts(store) == before, "a refused call wrote rows"
        return False, None
