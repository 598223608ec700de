"""Predicate names and cardinality.

A single-valued predicate (``lives_in``) has one true object at a time, so a new
object supersedes the old one; a multi-valued one (``likes``) accumulates.
"""

from __future__ import annotations

import re

from memstore.core.validation import MAX_IDENTIFIER_CHARS
from memstore.errors import InvalidInput

__all__ = ["SINGLE_VALUED", "is_single_valued", "normalize_predicate"]

SINGLE_VALUED: frozenset[str] = frozenset(
    {
        "name",
        "age",
        "birthday",
        "born_in",
        "hometown",
        "lives_in",
        "works_at",
        "employer",
        "job_title",
        "occupation",
        "married_to",
        "partner",
        "mother",
        "father",
        "boss",
        "email",
        "phone",
        "timezone",
        "nationality",
        "status",
    }
)

_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalize_predicate(predicate: str) -> str:
    """``"Lives In"`` and ``"lives-in"`` both become ``"lives_in"``."""
    normalized = _NON_WORD.sub("_", predicate.strip().lower()).strip("_")
    if not normalized:
        raise InvalidInput(f"predicate {predicate!r} has no letters or digits")
    # Lower-casing can lengthen text ("İ" becomes "i" + a combining dot, then "i_"),
    # so the column limit is checked on the normalised name.
    if len(normalized) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput(
            f"predicate is {len(normalized)} characters once normalised; "
            f"the limit is {MAX_IDENTIFIER_CHARS}"
        )
    return normalized


def is_single_valued(predicate: str) -> bool:
    return normalize_predicate(predicate) in SINGLE_VALUED
