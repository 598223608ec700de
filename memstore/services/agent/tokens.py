"""Token counting for context budgets: a protocol plus dependency-free estimators.

The default, :class:`ApproxTokenCounter`, is an upper bound of real tokenizers'
counts for ordinary text. To budget in a model's own tokens, pass its tokenizer
as a counter: any object with ``count(text) -> int``, or a plain callable
``text -> int`` (e.g. ``lambda t: len(tokenizer.encode(t).ids)``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Protocol, TypeAlias, runtime_checkable

from memstore.errors import InvalidInput

__all__ = [
    "ApproxTokenCounter",
    "CallableTokenCounter",
    "CharTokenCounter",
    "CountOnce",
    "CounterLike",
    "TokenCounter",
    "as_counter",
]


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that says how many tokens a text costs (e.g. a tiktoken wrapper)."""

    def count(self, text: str) -> int: ...


# One token each: a started four Latin letters, a started three digits, any other
# non-space character. Not core.text.words: a token estimate must count punctuation,
# CJK and emoji, which words drop. Matched only inside a whitespace-free word, where
# ``\S`` is reached only by what is neither a letter nor a digit.
_TOKEN = re.compile(r"[A-Za-z]{1,4}|[0-9]{1,3}|\S")


class ApproxTokenCounter:
    """A deliberately pessimistic estimate of BPE token counts, with no model download.

    Latin words cost one token per started four letters, numbers one per started
    three digits (how GPT-style tokenizers split them), and every other
    non-space character (punctuation, CJK, emoji) one token. English prose
    comes out somewhat above real tokenizer counts, which is the safe side of a
    budget. Joining texts never costs more than the parts, so per-item counts
    add up to an upper bound of the whole.
    """

    def count(self, text: str) -> int:
        # str.split() and the pattern's \s agree on what whitespace is, and no token
        # spans it, so words are counted apart; most words are plain letters, which
        # need no pattern match per four of them.
        total = 0
        for word in text.split():
            if word.isalpha() and word.isascii():
                total += (len(word) + 3) >> 2
            else:
                total += len(_TOKEN.findall(word))
        return total


class CharTokenCounter:
    """The classic rule of thumb: one token per ``chars_per_token`` characters."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


class CallableTokenCounter:
    """A :class:`TokenCounter` from a function ``text -> int`` (a tokenizer's length)."""

    def __init__(self, fn: Callable[[str], int]) -> None:
        self.fn = fn

    def count(self, text: str) -> int:
        n = self.fn(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidInput(
                f"the token counter returned {n!r} for a text; it must return a count >= 0"
            )
        return n


CounterLike: TypeAlias = TokenCounter | Callable[[str], int]


class CountOnce:
    """``counter``'s counts with each distinct text counted once: for one packing.

    A packing asks for the same texts again and again (each item's line, the titles,
    the date headers, the final renderings); a real tokenizer is the expensive part.
    Kept for one call only: a cache across calls would grow with every text ever
    packed. Like the budget itself, it takes a count to depend on the text alone.
    """

    __slots__ = ("_count", "_known")

    def __init__(self, counter: TokenCounter) -> None:
        self._count = counter.count
        self._known: dict[str, int] = {}

    def count(self, text: str) -> int:
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = self._count(text)
        return known


def as_counter(counter: CounterLike | None) -> TokenCounter:
    """``counter`` as a :class:`TokenCounter`; the default estimate when None."""
    if counter is None:
        return ApproxTokenCounter()
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return CallableTokenCounter(counter)
    raise InvalidInput("counter must have a count(text) -> int method or be a function text -> int")
