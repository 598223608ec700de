"""Bi-temporal facts: assert, retract, history and recall as of any time."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memstore.api.base import MAX_FACT_FIELD_CHARS, StoreBase
from memstore.embeddings.base import embed_checked
from memstore.errors import InvalidInput, NotFound
from memstore.predicates import is_single_valued, normalize_predicate
from memstore.recall.documents import fact_text
from memstore.repositories.facts import AssertOutcome, FactRepository, fact_from_row
from memstore.tenancy import storage_user_id
from memstore.types import Fact
from memstore.validation import (
    MAX_IDENTIFIER_CHARS,
    check_aware,
    check_identifier,
    check_limit,
    check_text,
)

__all__ = ["FactAPI"]


class FactAPI(StoreBase):
    """Bi-temporal facts: assert, retract, history and recall as of any time."""

    def _valid_fact(self, fact: Fact) -> tuple[str, Fact, bool, datetime]:
        if not isinstance(fact, Fact):
            raise InvalidInput(f"expected a Fact, got {type(fact).__name__}")
        user = storage_user_id(fact.user_id)
        subject = check_text("fact.subject", fact.subject, max_chars=MAX_FACT_FIELD_CHARS).strip()
        obj = check_text("fact.object", fact.object, max_chars=MAX_FACT_FIELD_CHARS).strip()
        check_text("fact.predicate", fact.predicate, max_chars=MAX_IDENTIFIER_CHARS)
        predicate = normalize_predicate(fact.predicate)
        confidence = fact.confidence
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not (0.0 <= confidence <= 1.0)
        ):
            raise InvalidInput("fact.confidence must be a number between 0 and 1")
        sources = tuple(fact.sources)
        for source in sources:
            check_identifier("fact.sources[]", source)
        valid_from = (
            check_aware("fact.valid_from", fact.valid_from)
            if (fact.valid_from is not None)
            else self.now()
        )
        if fact.valid_to is not None:
            check_aware("fact.valid_to", fact.valid_to)
            if fact.valid_to <= valid_from:
                raise InvalidInput("fact.valid_to must be later than fact.valid_from")
        single = (
            fact.single_valued if fact.single_valued is not None else (is_single_valued(predicate))
        )
        cleaned = replace(
            fact,
            subject=subject,
            object=obj,
            predicate=predicate,
            confidence=float(confidence),
            sources=sources,
        )
        return user, cleaned, bool(single), valid_from

    async def assert_fact(self, fact: Fact) -> AssertOutcome:
        """Like :meth:`add_fact`, but also says whether it added, reinforced or superseded."""
        user, cleaned, single, valid_from = self._valid_fact(fact)
        (vector,) = await embed_checked(self.embedder, [fact_text(cleaned)])
        async with self._write(user) as session:
            await self._claim_embedder(session)
            return await FactRepository(session=session, embedder=self.embedder).assert_fact(
                user,
                cleaned,
                single_valued=single,
                valid_from=valid_from,
                now=self.now(),
                embedding=vector,
            )

    async def add_fact(self, fact: Fact) -> str:
        """Record a fact; returns its logical id (stable across its versions)."""
        return (await self.assert_fact(fact)).fact_id

    async def retract_fact(self, fact_id: str, *, user_id: str | None = None) -> None:
        """Stop believing a fact from now on (closes transaction time; history stays)."""
        user = storage_user_id(user_id)
        check_identifier("fact_id", fact_id)
        async with self._write(user) as session:
            closed = await FactRepository(session=session).retract(user, fact_id, self.now())
        if not closed:
            raise NotFound(f"no current fact {fact_id!r} for this user")

    async def fact_history(
        self,
        *,
        user_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        fact_id: str | None = None,
    ) -> list[Fact]:
        """Every stored version, ordered by valid_from then recorded_at."""
        user = storage_user_id(user_id)
        if subject is not None:
            subject = check_text("subject", subject, max_chars=MAX_FACT_FIELD_CHARS).strip()
        if predicate is not None:
            predicate = normalize_predicate(check_text("predicate", predicate))
        if fact_id is not None:
            check_identifier("fact_id", fact_id)
        async with self._read(user) as session:
            return await FactRepository(session=session).history(
                user, subject=subject, predicate=predicate, fact_id=fact_id
            )

    async def recall_facts(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
    ) -> list[Fact]:
        """Facts true at ``valid_at`` as believed at ``known_at`` (both default to now)."""
        user = storage_user_id(user_id)
        check_text("query", query, allow_empty=True, max_chars=10_000)
        check_limit("limit", limit)
        now = self.now()
        valid_at = check_aware("valid_at", valid_at) if valid_at is not None else now
        known_at = check_aware("known_at", known_at) if known_at is not None else now
        if not query.strip():
            # Nothing to rank by: the most recently recorded facts.
            async with self._read(user) as session:
                newest = await FactRepository(session=session).text_candidates(
                    user, [], valid_at=valid_at, known_at=known_at, limit=limit
                )
            self.access_tracker.record(user, "fact", [f.fact_id or "" for f in newest], now)
            return newest
        qvec = await self._recall.embed_query(query)
        async with self._read(user) as session:
            facts = FactRepository(session=session)
            ranked = await self._recall.facts(
                session, user, query, where=facts.as_of(valid_at, known_at), qvec=qvec, limit=limit
            )
            wanted = [s.id for s in ranked[: limit * 2 + 10]]
            rows = await facts.rows_by_id(user, wanted)
        score = {s.id: s.score for s in ranked}
        found = [fact_from_row(r) for r in rows]
        # Ties (e.g. an empty query) go to the most recently recorded.
        found.sort(
            key=lambda f: (-score[f.id or ""], -(f.recorded_at or now).timestamp(), f.id or "")
        )
        self.access_tracker.record(user, "fact", [f.fact_id or "" for f in found[:limit]], now)
        return found[:limit]
