from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.documents import fact_text
from memstore.core.tenancy import TenantId, public_user_id
from memstore.dialects import dialect_for
from memstore.embeddings.base import Embedder, embed_checked
from memstore.models import FactRow
from memstore.models.facts import subject_key
from memstore.repositories.changes import ChangeEntry, ChangeLogRepository
from memstore.types import AssertOutcome, ChangeKind, Fact, FactChange, new_id

__all__ = [
    "FactRepository",
    "fact_from_row",
    "same_object",
]


def fact_from_row(row: FactRow) -> Fact:
    return Fact(
        id=row.id,
        fact_id=row.fact_id,
        user_id=public_user_id(row.user_id),
        subject=row.subject,
        predicate=row.predicate,
        object=row.object,
        single_valued=row.single_valued,
        confidence=row.confidence,
        sources=tuple(row.sources or ()),
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        recorded_at=row.recorded_at,
        superseded_at=row.superseded_at,
    )


def same_object(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def reinforce(old: float, new: float) -> float:
    """Independent confirmations raise confidence (noisy-OR), never above 1."""
    return min(1.0, 1.0 - (1.0 - old) * (1.0 - new))


class FactRepository:
    """Bi-temporal fact versions of one tenant at a time.

    Rows are inserted and, at most once, closed in transaction time
    (``superseded_at``); nothing else is ever updated. With an ``embedder``,
    every row it inserts carries an embedding: a copy of a row written before
    facts were embedded (or an insert given none) is embedded here, so no write
    path can leave a fact invisible to dense recall.
    """

    def __init__(self, *, session: AsyncSession, embedder: Embedder | None = None) -> None:
        self._session = session
        self._embedder = embedder
        # Logical ids of facts superseded by this repository's asserts (change log).
        self.superseded: list[str] = []

    async def _lock_key(self, user_id: TenantId, subject: str, predicate: str) -> None:
        # Serialise writers of one (tenant, subject, predicate) on Postgres; an
        # empty FOR UPDATE would lock nothing when the first value is written.
        # SQLite write transactions are already serial (BEGIN IMMEDIATE).
        if dialect_for(self._session).serial_writes:
            return
        digest = hashlib.blake2b(
            f"{user_id}\x1f{subject}\x1f{predicate}".encode(), digest_size=8
        ).digest()
        key = int.from_bytes(digest, "big", signed=True)
        await self._session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})

    async def _current(self, user_id: TenantId, subject: str, predicate: str) -> list[FactRow]:
        stmt = select(FactRow).where(
            FactRow.user_id == user_id,
            FactRow.subject_key == subject_key(subject),
            FactRow.subject == subject,
            FactRow.predicate == predicate,
            FactRow.superseded_at.is_(None),
        )
        return list((await self._session.scalars(stmt)).all())

    async def _close(self, row: FactRow, now: datetime) -> None:
        await self._session.execute(
            update(FactRow)
            .where(FactRow.user_id == row.user_id, FactRow.id == row.id)
            .values(superseded_at=now)
        )

    async def _insert(self, user_id: TenantId, **values: object) -> str:
        if values.get("embedding") is None and self._embedder is not None:
            text_ = fact_text(
                Fact(
                    subject=str(values["subject"]),
                    predicate=str(values["predicate"]),
                    object=str(values["object"]),
                )
            )
            (values["embedding"],) = await embed_checked(self._embedder, [text_])
        row_id = new_id()
        values.setdefault("fact_id", row_id)
        await self._session.execute(insert(FactRow).values(user_id=user_id, id=row_id, **values))
        return row_id

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
        await self._lock_key(user_id, fact.subject, fact.predicate)
        current = await self._current(user_id, fact.subject, fact.predicate)
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
            await self._close(identical, now)
            await self._insert(
                user_id,
                **statement,
                fact_id=identical.fact_id,
                object=identical.object,
                confidence=confidence,
                sources=sources,
                valid_from=earliest,
                valid_to=identical.valid_to,
                recorded_at=now,
                embedding=identical.embedding,
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
            await self._close(row, now)
            self.superseded.append(row.fact_id)
            change = FactChange.SUPERSEDED
            kept = {
                **statement,
                "object": row.object,
                "confidence": row.confidence,
                "sources": list(row.sources),
                "recorded_at": now,
                "embedding": row.embedding,
            }
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
        """Log what this repository's asserts changed; last in the transaction."""
        entries = [ChangeEntry(ChangeKind.FACT_SUPERSEDED, f) for f in self.superseded]
        entries += [
            ChangeEntry(ChangeKind.FACT_ASSERTED, o.fact_id)
            for o in outcomes
            if o.change != FactChange.UNCHANGED
        ]
        self.superseded = []
        await ChangeLogRepository(session=self._session).record(user_id, entries, now=now)

    async def retract(self, user_id: TenantId, fact_id: str, now: datetime) -> int:
        stmt = (
            update(FactRow)
            .where(
                FactRow.user_id == user_id,
                or_(FactRow.fact_id == fact_id, FactRow.id == fact_id),
                FactRow.superseded_at.is_(None),
            )
            .values(superseded_at=now)
        )
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def get_version(self, user_id: str, version_id: str) -> Fact | None:
        row = await self._session.get(FactRow, (user_id, version_id))
        return fact_from_row(row) if row is not None else None

    async def count_current(self, user_id: TenantId) -> int:
        stmt = (
            select(func.count())
            .select_from(FactRow)
            .where(FactRow.user_id == user_id, FactRow.superseded_at.is_(None))
        )
        return int((await self._session.scalar(stmt)) or 0)

    async def latest_current(self, user_id: TenantId, limit: int) -> list[Fact]:
        stmt = (
            select(FactRow)
            .where(
                FactRow.user_id == user_id,
                FactRow.superseded_at.is_(None),
                FactRow.valid_to.is_(None),
            )
            .order_by(FactRow.recorded_at.desc(), FactRow.id)
            .limit(limit)
        )
        return [fact_from_row(r) for r in (await self._session.scalars(stmt)).all()]
