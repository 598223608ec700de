"""Words and stop words: the one tokeniser of keyword search, relevance and the hashing embedder.

Every path that splits text into words imports :func:`words` (and
:func:`content_words` / :func:`is_content_word` where stop words go), so the
full-text candidates, BM25, the relevance floor and the hashed vectors all see
the same words.
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "content_words", "is_content_word", "keyword_tokens", "words"]

# Letters and digits only: underscores and % would be LIKE wildcards, and a word made
# of these can be quoted into an FTS5 or tsquery expression without escaping.
# Hand-written on purpose: a tokeniser library (nltk, spaCy) would be a heavy extra
# for one regular expression, and its rules could change the words of stored vectors.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be been but by can did do does for from had has have he her
    hers him his how i if in into is it its me my of on or our she so that the their
    them then there these they this to was we were what when where which who whom why
    will with would you your""".split()
)


def words(text: str) -> list[str]:
    """The lower-case words of ``text`` (runs of letters and digits), in order, repeats kept."""
    return _WORD.findall(text.lower())


def is_content_word(word: str) -> bool:
    """A word (from :func:`words`) that keyword search keeps: not one letter, not a stop word."""
    return len(word) > 1 and word not in STOPWORDS


def content_words(text: str) -> list[str]:
    """:func:`words` without the ones :func:`is_content_word` drops, in order, repeats kept."""
    return [w for w in words(text) if is_content_word(w)]


def keyword_tokens(text: str, *, limit: int = 16) -> list[str]:
    """Distinct lower-case content words of ``text``, in order of first appearance."""
    return list(dict.fromkeys(content_words(text)))[:limit]
