"""Absolute relevance of a recalled row to its query, and the floor recall can apply to it.

The ranking fuses z-scores over a tenant's candidates: it says which rows are
best *relative to each other*, never whether any of them is about the query.
``relevance`` is a separate number in [0, 1] that does not depend on the other
rows, so a floor on it can say "nothing here is about that". It is the
``score`` of every recalled episode and fact (``recall_scored``,
``recall_facts_scored``, the ``search_memory`` tool, context items), one scale
for both kinds:

    relevance = max(clamp(dense, 0, 1), coverage)

``dense`` is the cosine similarity the ranking already computed (0 for a row
that was not among the dense candidates), ``coverage`` the fraction of the
query's keyword terms (``memstore.core.lexical.query_terms``) that occur in the row's
keyword text, matched the way the full-text index finds candidates (a stem as
the start of a word).
See docs/RECALL.md, "Scores and the relevance floor".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memstore.core.lexical import is_prefix
from memstore.core.text import words as text_words
from memstore.core.validation import is_number
from memstore.errors import InvalidInput

__all__ = ["check_min_score", "coverage", "relevance"]


def check_min_score(min_score: object) -> float | None:
    """``None`` (no floor) or a number in [0, 1]; anything else is refused before any I/O."""
    if min_score is None:
        return None
    if not is_number(min_score) or not 0.0 <= min_score <= 1.0:
        raise InvalidInput(
            f"min_score must be None (no floor) or a number from 0 to 1, got {min_score!r}; "
            "it is compared with each row's relevance, the score of recall_scored (0.35 suits "
            "the default embedder and MiniLM, see docs/RECALL.md)"
        )
    return float(min_score)


def coverage(terms: Sequence[str], text: str) -> float:
    """The fraction of ``terms`` (query terms, already stemmed) that ``text`` contains.

    A term matches as the full-text index matches it: the start of a word of the
    text (a short term only a whole word). Words are joined into one string so
    each term is one substring search, not a loop over the words.
    """
    if not terms:
        return 0.0
    words = f" {' '.join(text_words(text))} "
    found = sum((f" {t}" if is_prefix(t) else f" {t} ") in words for t in terms)
    return found / len(terms)


def relevance(terms: Sequence[str], text: str, dense: float) -> float:
    """``max(clamp(dense, 0, 1), coverage(terms, text))``; ``terms`` from ``query_terms``."""
    cosine = min(max(dense, 0.0), 1.0) if math.isfinite(dense) else 0.0
    return max(cosine, coverage(terms, text))
