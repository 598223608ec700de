"""The rules of asserting a fact: reinforce, supersede, keep single values disjoint.

:class:`FactWriter` decides, inside the caller's write transaction, what a new
statement does to the tenant's current versions and has
:class:`~memstore.repositories.facts.FactRepository` insert and close the rows.
Every row it inserts carries an embedding: a copy of a row written before facts
were embedded (or an insert given none) is embedded here, so no write path can
leave a fact invisible to dense recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memstore.core.documents import fact_text
from memstore.core.tenancy import TenantId
from memstore.embeddings.base import Embedder, embed_checked
from memstore.models import FactRow
from memstore.repositories.changes import ChangeEntry, ChangeLogRepository
from memstore.repositories.facts import FactRepository
from memstore.types import AssertOutcome, ChangeKind, Fact, FactChange

if TYPE_CHECKING:  # the unit of work's session, handed on to the repositories
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["FactWriter", "reinforce", "same_object"]


def same_object(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def reinforce(old: float, new: float) -> float:
    """Independent confirmations raise confidence (noisy-OR), never above 1."""
    return min(1.0, 1.0 - (1.0 - old) * (1.0 - new))


def _copy(row: FactRow, statement: dict[str, object], now: datetime) -> dict[str, object]:
    """``row``'s value as a version recorded ``now``; its logical id and interval are the
    caller's to give."""
    return {
        **statement,
        "object": row.object,
        "confidence": row.confidence,
        "sources": list(row.sources),
        "recorded_at": now,
        "embedding": row.embedding,
    }


class FactWriter:
    """Asserts facts of one write transaction (``session``) and logs what they changed."""

    def __init__(self, *, session: AsyncSession, embedder: Embedder) -> None:
        self._session = session
        self._repo = FactRepository(session=session)
        self._embedder = embedder
        # Logical ids of facts superseded by this writer's asserts (change log).
        self.superseded: list[str] = []

    async def _insert(self, user_id: TenantId, **values: object) -> str:
        if values.get("embedding") is None:
            text_ = fact_text(
                Fact(
                    subject=str(values["subject"]),
                    predicate=str(values["predicate"]),
                    object=str(values["object"]),
                )
            )
            (values["embedding"],) = await embed_checked(self._embedder, [text_])
        return await self._repo.insert(user_id, **values)

    async def assert_fact(
        self,
        user_id: TenantId,
        fact: Fact,
        *,
        single_valued: bool,
        valid_from: datetime,
        now: datetime,
        embedding: Any = None,
    ) -> AssertOutcome:
        """Record ``fact`` (already validated and normalised) as the tenant now believes it."""
        current = await self._repo.current_locked(user_id, fact.subject, fact.predicate)
        statement = {
            "subject": fact.subject,
            "predicate": fact.predicate,
            "single_valued": single_valued,
        }

        identical = next(
            (
                r
                for r in current
                if same_object(r.object, fact.object) and r.valid_to == fact.valid_to
            ),
            None,
        )
        if identical is not None:
            sources = list(dict.fromkeys([*identical.sources, *fact.sources]))
            confidence = reinforce(identical.confidence, fact.confidence)
            earliest = min(identical.valid_from, valid_from)
            if (
                sources == list(identical.sources)
                and confidence == identical.confidence
                and earliest == identical.valid_from
            ):
                return AssertOutcome(FactChange.UNCHANGED, identical.fact_id)
            await self._repo.close(identical, now)
            reinforced = _copy(identical, statement, now) | {
                "confidence": confidence,
                "sources": sources,
            }
            await self._insert(
                user_id,
                **reinforced,
                fact_id=identical.fact_id,
                valid_from=earliest,
                valid_to=identical.valid_to,
            )
            return AssertOutcome(FactChange.REINFORCED, identical.fact_id)

        change = FactChange.ADDED
        valid_to = fact.valid_to
        if single_valued:
            change, valid_to = await self._make_room(
                user_id, statement, current, valid_from, valid_to, now
            )
        fact_id = await self._insert(
            user_id,
            **statement,
            object=fact.object,
            confidence=fact.confidence,
            sources=list(dict.fromkeys(fact.sources)),
            valid_from=valid_from,
            valid_to=valid_to,
            recorded_at=now,
            embedding=embedding,
        )
        return AssertOutcome(change, fact_id)

    async def _make_room(
        self,
        user_id: TenantId,
        statement: dict[str, object],
        current: list[FactRow],
        start: datetime,
        end: datetime | None,
        now: datetime,
    ) -> tuple[FactChange, datetime | None]:
        """Keep a single-valued statement's current intervals disjoint around [start, end).

        Values that began earlier are cut at ``start`` (a correction: the old row
        is superseded and a shortened copy recorded); a value that begins later
        bounds the new one's end. Returns the change and the new value's end.
        """
        change = FactChange.ADDED
        later = [r.valid_from for r in current if r.valid_from > start]
        if later:
            end = min([*later, end]) if end is not None else min(later)
        for row in current:
            overlaps = row.valid_from <= start and (row.valid_to is None or row.valid_to > start)
            if not overlaps:
                continue
            await self._repo.close(row, now)
            self.superseded.append(row.fact_id)
            change = FactChange.SUPERSEDED
            kept = _copy(row, statement, now)
            if row.valid_from < start:
                await self._insert(
                    user_id, **kept, fact_id=row.fact_id, valid_from=row.valid_from, valid_to=start
                )
            if end is not None and (row.valid_to is None or row.valid_to > end):
                # The old value resumes after a bounded new one; a new logical fact
                # because its first part is already current under the old id.
                await self._insert(user_id, **kept, valid_from=end, valid_to=row.valid_to)
        return change, end

    async def record_changes(
        self, user_id: TenantId, outcomes: Sequence[AssertOutcome], now: datetime
    ) -> None:
        """Log what this writer's asserts changed; last in the transaction."""
        entries = [ChangeEntry(ChangeKind.FACT_SUPERSEDED, f) for f in self.superseded]
        entries += [
            ChangeEntry(ChangeKind.FACT_ASSERTED, o.fact_id)
            for o in outcomes
            if o.change != FactChange.UNCHANGED
        ]
        self.superseded = []
        await ChangeLogRepository(session=self._session).record(user_id, entries, now=now)
