"""Keyword side of recall: query terms, searchable text, and BM25 scored in Python.

The database's full-text index (FTS5 / tsvector) only finds candidate rows
(any query term as a prefix); the score is computed here from the candidates'
text, so SQLite and Postgres rank identically whatever their own rankers do.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memstore.core.text import content_words, is_content_word, keyword_tokens, words

__all__ = [
    "BM25_B",
    "BM25_K1",
    "bm25_scores",
    "doc_terms",
    "fts5_query",
    "is_prefix",
    "query_terms",
    "stem",
    "tsquery",
]

_SUFFIXES = ("ing", "ed", "es", "s", "ly")
# Below this length a stem is matched exactly, not as a prefix ("go*" would match everything).
_MIN_PREFIX = 3
# Measured on the LoCoMo dev set (see docs/RECALL.md); short conversational
# turns favour weak length normalisation.
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


def doc_terms(text: str) -> list[str]:
    return [stem(w) for w in content_words(text)]


# Tokenising candidates dominates keyword scoring and the same rows come back
# query after query; a pure function of the text, so caching cannot go stale.
@lru_cache(maxsize=1 << 15)
def _term_counts(text: str) -> Counter[str]:
    """``Counter(doc_terms(text))``, stemming each distinct word once; callers must not mutate."""
    counts: Counter[str] = Counter()
    for word, n in Counter(words(text)).items():
        if is_content_word(word):
            counts[stem(word)] += n
    return counts


def is_prefix(term: str) -> bool:
    """Whether ``term`` matches words it begins (long enough) or only itself."""
    return len(term) >= _MIN_PREFIX


def fts5_query(terms: Sequence[str]) -> str:
    # Terms are core.text words (letters and digits), so quoting cannot be broken out of.
    return " OR ".join(f'"{t}"*' if is_prefix(t) else f'"{t}"' for t in terms)


def tsquery(terms: Sequence[str]) -> str:
    return " | ".join(f"{t}:*" if is_prefix(t) else t for t in terms)


def _matches(token: str, term: str) -> bool:
    return token.startswith(term) if is_prefix(term) else token == term


def bm25_scores(
    terms: Sequence[str],
    docs: Iterable[tuple[str, str]],
    *,
    total_docs: int,
    avg_chars: float,
) -> dict[str, float]:
    """Okapi BM25 of ``(id, text)`` candidates; every doc containing a term must be among them.

    Length normalisation uses characters, so the average can come from SQL.
    """
    if not terms:
        return {}
    parsed = [(doc_id, text, _term_counts(text)) for doc_id, text in docs]
    # Which query terms each distinct token matches, decided once per query.
    matched: dict[str, tuple[str, ...]] = {}
    counts: list[dict[str, int]] = []
    df = dict.fromkeys(terms, 0)
    for _, _, tokens in parsed:
        tf = dict.fromkeys(terms, 0)
        for token, n in tokens.items():
            hits = matched.get(token)
            if hits is None:
                hits = matched[token] = tuple(t for t in terms if _matches(token, t))
            for t in hits:
                tf[t] += n
        counts.append(tf)
        for t, n in tf.items():
            if n:
                df[t] += 1
    n_docs = max(total_docs, len(parsed), 1)
    avg = max(avg_chars, 1.0)
    idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    scores: dict[str, float] = {}
    for (doc_id, text, _), tf in zip(parsed, counts, strict=True):
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(text) / avg)
        score = sum(idf[t] * n * (BM25_K1 + 1) / (n + norm) for t, n in tf.items() if n)
        if score > 0:
            scores[doc_id] = score
    return scores
