"""Hypothesis strategies and helpers shared by the hostile-input tests of the thread
buffer, working memory and agent tools (the episode/fact/block ones keep their own)."""

from __future__ import annotations

import os
from datetime import timedelta, timezone
from typing import Any

from conftest import table_counts
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from memstore import InvalidInput, MemoryStore
from memstore.core.validation import MAX_IDENTIFIER_CHARS, MAX_TEXT_CHARS

__all__ = [
    "HOSTILE_BITS",
    "HYPOTHESIS",
    "any_text",
    "around",
    "attempt",
    "datetimes",
    "hostile_text",
    "identifiers",
    "json_docs",
    "mostly",
    "odd_text",
    "user_ids",
    "valid_json",
]

# Odd but storable: quoting, LIKE / glob metacharacters, SQL, bidi and zero-width marks.
ODD_BITS = [
    "'",
    '"',
    ";",
    "--",
    "/*",
    "%",
    "_",
    "\\",
    "[",
    "]",
    "*",
    "?",
    "!",
    "^",
    "\\u0000",
    "\u202e",
    "\ufeff",
    "\u200b",
    "\u2028",
    "\U0001f600",
    "\uffff",
    "é",
    "e\u0301",
    "İ",
    "'); DROP TABLE slots; --",
    "' OR '1'='1",
    "$1",
    "::jsonb",
    "NULL",
    "null",
    "{}",
    "[]",
    " ",
    "\u00a0",
    "__anonymous__",
]
# Never storable (NUL, lone surrogates) or refused in identifiers (control characters).
BAD_BITS = ["\x00", "\ud800", "\udfff", "\x7f", "\x1b", "\r\n", "\t", "\x85"]
HOSTILE_BITS = ODD_BITS + BAD_BITS


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` seven times in eight: with several fields per call, a fair share of
    examples must get past validation for the round-trip checks to mean anything."""
    return st.integers(0, 7).flatmap(lambda n: bad if n == 0 else good)


odd_char = st.one_of(st.characters(blacklist_categories=("Cc", "Cs")), st.sampled_from(ODD_BITS))
odd_text = st.lists(odd_char, min_size=1, max_size=8).map("".join)
hostile_char = st.one_of(st.characters(), st.sampled_from(HOSTILE_BITS))
hostile_text = st.lists(hostile_char, max_size=10).map("".join)


def around(limit: int) -> st.SearchStrategy[str]:
    """Strings of length limit-1 .. limit+1 ending in a random character."""
    return st.tuples(st.integers(limit - 1, limit + 1), st.characters()).map(
        lambda nc: ("a" * nc[0])[:-1] + nc[1] if nc[0] else ""
    )


any_text = mostly(st.one_of(odd_text, st.just("")), st.one_of(hostile_text, around(MAX_TEXT_CHARS)))
identifiers = mostly(odd_text, st.one_of(hostile_text, around(MAX_IDENTIFIER_CHARS)))
user_ids = st.one_of(st.none(), identifiers)
offsets = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m)))
datetimes = mostly(st.datetimes(timezones=offsets), st.datetimes())  # naive: refused
good_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e308, 5e-324, 1e16, -0.0, 1.5e-5, 2.0**53 + 2]),
    odd_text,
)
bad_leaves = st.one_of(st.floats(), hostile_text)
valid_json = st.recursive(
    good_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)
    ),
    max_leaves=20,
)
hostile_json = st.recursive(
    st.one_of(good_leaves, bad_leaves),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(hostile_text, inner, max_size=4),
        st.tuples(inner),  # not JSON: must be refused, never stored as a list
        st.dictionaries(st.integers(), inner, min_size=1, max_size=2),
    ),
    max_leaves=20,
)
json_docs = mostly(valid_json, hostile_json)

HYPOTHESIS = settings(
    max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _event(name: str) -> None:
    # Shown by --hypothesis-show-statistics: how often examples get past validation.
    if currently_in_test_context():
        event(name)


async def attempt(
    store: MemoryStore, url: str, call: Any, *, also: tuple[type[Exception], ...] = ()
) -> tuple[bool, Any]:
    """(True, result) of ``call``; or (False, None) after checking that it raised
    InvalidInput (or one of ``also``) and wrote nothing to any tenant table of ``url``
    (the store's database)."""
    await store.flush_access()  # buffered access counts must not blur the counts
    before = await table_counts(url)
    try:
        result = await call()
    except (InvalidInput, *also) as exc:
        _event(f"refused: {type(exc).__name__}")
        await store.flush_access()
        assert await table_counts(url) == before, "a refused call wrote rows"
        return False, None
    _event("succeeded")
    return True, result
