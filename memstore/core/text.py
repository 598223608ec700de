"""Tokenisation shared by keyword matching paths."""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "keyword_tokens"]

# Letters and digits only: underscores and % would be LIKE wildcards.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be been but by can did do does for from had has have he her
    hers him his how i if in into is it its me my of on or our she so that the their
    them then there these they this to was we were what when where which who whom why
    will with would you your""".split()
)


def keyword_tokens(text: str, *, limit: int = 16) -> list[str]:
    """Distinct lower-case content words of ``text``, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) > 1 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)[:limit]
