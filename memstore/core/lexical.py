"""Keyword side of recall: query terms and how they match, and BM25's constants.

The database's full-text index (FTS5 / tsvector) finds the rows holding a query
term as a prefix; the recall statements (memstore/search/) count those
occurrences and compute BM25 from them with these constants, the same way on
SQLite and Postgres whatever their own rankers do.
"""

from __future__ import annotations

from functools import lru_cache

from memstore.core.text import keyword_tokens

__all__ = [
    "BM25_B",
    "BM25_K1",
    "is_prefix",
    "query_terms",
    "stem",
]

_SUFFIXES = ("ing", "ed", "es", "s", "ly")
# Below this length a stem is matched exactly, not as a prefix ("go*" would match everything).
_MIN_PREFIX = 3
# Measured on the LoCoMo dev set (see docs/RECALL.md); short conversational
# turns favour weak length normalisation. ``BM25_B`` weighs the length of what
# was recorded (a longer turn says more); an agent's answer is weighed in full
# (memstore/search/statement.py's ``BM25``).
BM25_K1 = 0.9
BM25_B = 0.4


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light suffix strip; matching is by prefix, so "paint" finds "painting", "painter"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_PREFIX:
            return word[: -len(suffix)]
    return word


def query_terms(query: str) -> list[str]:
    """Distinct stemmed content words of a query (at most 16)."""
    return list(dict.fromkeys(stem(t) for t in keyword_tokens(query)))


def is_prefix(term: str) -> bool:
    """Whether ``term`` matches words it begins (long enough) or only itself."""
    return len(term) >= _MIN_PREFIX
