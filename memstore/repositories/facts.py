"""Fact versions: read, insert and close rows; the rules of asserting live in services."""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.dialects import Lock, dialect_for
from memstore.models import FactRow
from memstore.models.facts import subject_key
from memstore.repositories.rows import by_key, from_row
from memstore.types import Fact, new_id

__all__ = ["FactRepository", "fact_from_row"]


def fact_from_row(row: FactRow) -> Fact:
    return from_row(Fact, row, sources=tuple(row.sources or ()))


class FactRepository:
    """Bi-temporal fact versions of one tenant at a time.

    Rows are inserted and, at most once, closed in transaction time
    (``superseded_at``); nothing else is ever updated. What to insert or close
    is :mod:`memstore.services.bitemporal`'s decision.
    """

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def _lock_key(self, user_id: TenantId, subject: str, predicate: str) -> None:
        # Serialise writers of one (tenant, subject, predicate) where writers run
        # at once; an empty FOR UPDATE would lock nothing when the first value is
        # written.
        digest = hashlib.blake2b(
            f"{user_id}\x1f{subject}\x1f{predicate}".encode(), digest_size=8
        ).digest()
        key = int.from_bytes(digest, "big", signed=True)
        await dialect_for(self._session).lock(self._session, Lock(key))

    async def current_locked(
        self, user_id: TenantId, subject: str, predicate: str
    ) -> list[FactRow]:
        """The statement's current versions; no other writer changes them until commit."""
        await self._lock_key(user_id, subject, predicate)
        return await self._current(user_id, subject, predicate)

    async def _current(self, user_id: TenantId, subject: str, predicate: str) -> list[FactRow]:
        stmt = select(FactRow).where(
            FactRow.user_id == user_id,
            FactRow.subject_key == subject_key(subject),
            FactRow.subject == subject,
            FactRow.predicate == predicate,
            FactRow.superseded_at.is_(None),
        )
        return list((await self._session.scalars(stmt)).all())

    async def close(self, row: FactRow, now: datetime) -> None:
        await self._session.execute(
            update(FactRow)
            .where(FactRow.user_id == row.user_id, FactRow.id == row.id)
            .values(superseded_at=now)
        )

    async def insert(self, user_id: TenantId, **values: object) -> str:
        """Insert a version; its ``fact_id`` defaults to the new row's id (a new fact)."""
        row_id = new_id()
        values.setdefault("fact_id", row_id)
        await self._session.execute(insert(FactRow).values(user_id=user_id, id=row_id, **values))
        return row_id

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
        return await by_key(self._session, FactRow, (user_id, version_id), fact_from_row)

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
