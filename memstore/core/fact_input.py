"""Validation of a fact as written by a caller or an extractor."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memstore.core.predicates import is_single_valued, normalize_predicate
from memstore.core.tenancy import TenantId, storage_user_id
from memstore.core.validation import (
    MAX_IDENTIFIER_CHARS,
    check_aware,
    check_identifier,
    check_number_between,
    check_text,
)
from memstore.errors import InvalidInput
from memstore.types import Fact

__all__ = ["MAX_FACT_FIELD_CHARS", "valid_fact"]

MAX_FACT_FIELD_CHARS = 2_000


def valid_fact(fact: Fact, *, now: datetime) -> tuple[TenantId, Fact, bool, datetime]:
    """Check a fact; returns (stored user id, cleaned fact, single-valued, valid_from).

    ``valid_from`` defaults to ``now``.
    """
    if not isinstance(fact, Fact):
        raise InvalidInput(f"expected a Fact, got {type(fact).__name__}")
    user = storage_user_id(fact.user_id, operation="fact.user_id")
    subject = check_text("fact.subject", fact.subject, max_chars=MAX_FACT_FIELD_CHARS).strip()
    obj = check_text("fact.object", fact.object, max_chars=MAX_FACT_FIELD_CHARS).strip()
    check_text("fact.predicate", fact.predicate, max_chars=MAX_IDENTIFIER_CHARS)
    predicate = normalize_predicate(fact.predicate)
    confidence = check_number_between("fact.confidence", fact.confidence, 0, 1)
    sources = tuple(fact.sources)
    for source in sources:
        check_identifier("fact.sources[]", source)
    valid_from = (
        check_aware("fact.valid_from", fact.valid_from) if (fact.valid_from is not None) else now
    )
    if fact.valid_to is not None:
        check_aware("fact.valid_to", fact.valid_to)
        if fact.valid_to <= valid_from:
            raise InvalidInput("fact.valid_to must be later than fact.valid_from")
    single = fact.single_valued if fact.single_valued is not None else (is_single_valued(predicate))
    cleaned = replace(
        fact,
        subject=subject,
        object=obj,
        predicate=predicate,
        confidence=float(confidence),
        sources=sources,
    )
    return user, cleaned, bool(single), valid_from
