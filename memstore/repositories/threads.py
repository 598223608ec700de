from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.db.crosstenant import cross_tenant
from memstore.db.prepared import fetch
from memstore.db.unit import Reader
from memstore.db.upsert import insert_for
from memstore.models import SlotRow, ThreadRow
from memstore.repositories.rows import by_key, from_row
from memstore.types import Slot, ThreadInfo

__all__ = ["SlotReads", "ThreadRepository", "slot_from_row"]


def slot_from_row(row: SlotRow) -> Slot:
    return from_row(Slot, row, timestamp=row.created_at)


def _info(row: ThreadRow) -> ThreadInfo:
    return from_row(ThreadInfo, row, slot_count=row.next_slot_index)


class ThreadRepository:
    """Threads and their append-only slots, one tenant at a time.

    Slot rows are only ever inserted or deleted (with their thread); the
    database rejects UPDATE of a slot.
    """

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    def _upsert(self) -> Any:
        return insert_for(self._session)(ThreadRow)

    async def claim_index(
        self, user_id: TenantId, thread_id: str, *, now: datetime, max_slots: int
    ) -> int | None:
        """Reserve the thread's next slot index, creating the thread if new.

        One statement reads and increments the counter, so no two callers get
        the same index (see ThreadBuffer.append for why on each database).
        Returns None when the thread already holds ``max_slots`` slots.
        """
        stmt = self._upsert().values(
            user_id=user_id,
            thread_id=thread_id,
            next_slot_index=1,
            created_at=now,
            last_activity_at=now,
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[ThreadRow.user_id, ThreadRow.thread_id],
            set_={
                "next_slot_index": ThreadRow.next_slot_index + 1,
                "last_activity_at": stmt.excluded.last_activity_at,
            },
            where=ThreadRow.next_slot_index < max_slots,
        ).returning(ThreadRow.next_slot_index)
        claimed = (await self._session.execute(stmt)).scalar_one_or_none()
        return None if claimed is None else int(claimed) - 1

    async def add_slot(self, user_id: TenantId, slot: Slot) -> None:
        # The slot's fields are its row's columns, but for its time and tenant.
        columns = {k: v for k, v in vars(slot).items() if k != "timestamp"}
        columns |= {"user_id": user_id, "created_at": slot.timestamp}
        stmt = insert(SlotRow).values(columns)
        await self._session.execute(stmt)

    async def info(self, user_id: TenantId, thread_id: str) -> ThreadInfo | None:
        return await by_key(self._session, ThreadRow, (user_id, thread_id), _info)

    async def slots(
        self,
        user_id: TenantId,
        thread_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        payload_type: str | None = None,
        from_id: str | None = None,
        limit: int | None = None,
    ) -> list[Slot]:
        stmt = select(SlotRow).where(
            SlotRow.user_id == user_id,
            SlotRow.thread_id == thread_id,
            SlotRow.slot_index >= start,
        )
        if stop is not None:
            stmt = stmt.where(SlotRow.slot_index < stop)
        if payload_type is not None:
            stmt = stmt.where(SlotRow.payload_type == payload_type)
        if from_id is not None:
            stmt = stmt.where(SlotRow.from_id == from_id)
        stmt = stmt.order_by(SlotRow.slot_index)
        if limit is not None:
            stmt = stmt.limit(limit)
        rows = (await self._session.scalars(stmt)).all()
        return [slot_from_row(r) for r in rows]

    async def delete(self, user_id: TenantId, thread_ids: Sequence[str]) -> dict[str, int]:
        """Delete threads (their slots go by ON DELETE CASCADE); returns id -> slot count."""
        if not thread_ids:
            return {}
        # The header row goes first: on Postgres this waits for any appender
        # holding its lock, and the cascade then also removes the slot that
        # appender committed.
        stmt = (
            delete(ThreadRow)
            .where(ThreadRow.user_id == user_id, ThreadRow.thread_id.in_(list(thread_ids)))
            .returning(ThreadRow.thread_id, ThreadRow.next_slot_index)
        )
        removed = {
            r.thread_id: int(r.next_slot_index) for r in (await self._session.execute(stmt)).all()
        }
        return removed

    async def delete_idle(self, user_id: TenantId, cutoff: datetime) -> dict[str, int]:
        # The condition sits in the DELETE itself, so on Postgres a thread that an
        # appender touched while we waited for its row lock is re-checked and kept.
        stmt = (
            delete(ThreadRow)
            .where(ThreadRow.user_id == user_id, ThreadRow.last_activity_at < cutoff)
            .returning(ThreadRow.thread_id, ThreadRow.next_slot_index)
        )
        return {
            r.thread_id: int(r.next_slot_index) for r in (await self._session.execute(stmt)).all()
        }

    async def delete_beyond(self, user_id: TenantId, keep: int) -> dict[str, int]:
        """Delete all but the ``keep`` newest threads (by creation, then id)."""
        oldest = (
            select(ThreadRow.thread_id)
            .where(ThreadRow.user_id == user_id)
            .order_by(ThreadRow.created_at.desc(), ThreadRow.thread_id.desc())
            .offset(keep)
        )
        victims = list((await self._session.scalars(oldest)).all())
        return await self.delete(user_id, victims)

    async def exists(self, user_id: TenantId, thread_id: str) -> bool:
        stmt = select(ThreadRow.thread_id).where(
            ThreadRow.user_id == user_id, ThreadRow.thread_id == thread_id
        )
        return (await self._session.scalar(stmt)) is not None

    async def list_threads(self, user_id: TenantId) -> list[ThreadInfo]:
        stmt = (
            select(ThreadRow)
            .where(ThreadRow.user_id == user_id)
            .order_by(ThreadRow.created_at, ThreadRow.thread_id)
        )
        return [_info(r) for r in (await self._session.scalars(stmt)).all()]

    async def totals(self, user_id: TenantId) -> tuple[int, int]:
        """(thread count, slot count) of the tenant."""
        stmt = select(func.count(), func.coalesce(func.sum(ThreadRow.next_slot_index), 0)).where(
            ThreadRow.user_id == user_id
        )
        threads, slots = (await self._session.execute(stmt)).one()
        return int(threads), int(slots)

    async def tenants_to_collect(
        self, *, max_threads: int, cutoff: datetime | None
    ) -> list[TenantId]:
        """Stored tenant ids that have more than ``max_threads`` threads or an idle one.

        The one statement of this repository that spans tenants: an operator's
        sweep needs to know whom to visit. It reads tenant ids only; all the
        deleting is then done per tenant.
        """
        over = func.count() > max_threads
        condition = (
            over if cutoff is None else or_(over, func.min(ThreadRow.last_activity_at) < cutoff)
        )
        stmt = (
            select(ThreadRow.user_id)
            .group_by(ThreadRow.user_id)
            .having(condition)
            .order_by(ThreadRow.user_id)
        )
        stmt = cross_tenant(stmt, "gc-all-tenants")
        return [TenantId(u) for u in (await self._session.scalars(stmt)).all()]


# A waiter's reads, built once: they run on the driver (memstore.db.prepared).
_SLOT_COUNT = select(ThreadRow.next_slot_index).where(
    ThreadRow.user_id == bindparam("user_id"), ThreadRow.thread_id == bindparam("thread_id")
)
_SLOTS_AFTER = (
    select(*SlotRow.__table__.columns)
    .where(
        SlotRow.user_id == bindparam("user_id"),
        SlotRow.thread_id == bindparam("thread_id"),
        SlotRow.slot_index >= bindparam("start"),
    )
    .order_by(SlotRow.slot_index)
)
_SLOTS_AFTER_LIMITED = _SLOTS_AFTER.limit(bindparam("limit"))


class SlotReads:
    """A waiter's reads of a thread, one statement each: they run on a
    :data:`~memstore.db.unit.Reader`, an autocommit connection with no ORM session."""

    def __init__(self, *, reader: Reader) -> None:
        self._reader = reader

    async def count(self, user_id: TenantId, thread_id: str) -> int:
        """How many slots the thread has handed out (0: no such thread)."""
        params = {"user_id": user_id, "thread_id": thread_id}
        found = await fetch(self._reader, _SLOT_COUNT, params)
        return int(found[0][0]) if found else 0

    async def after(
        self, user_id: TenantId, thread_id: str, *, start: int, limit: int | None
    ) -> list[Slot]:
        """The thread's slots with index >= ``start``, in order, at most ``limit``."""
        params: dict[str, Any] = {"user_id": user_id, "thread_id": thread_id, "start": start}
        stmt = _SLOTS_AFTER
        if limit is not None:
            stmt, params["limit"] = _SLOTS_AFTER_LIMITED, limit
        rows = await fetch(self._reader, stmt, params)
        return [from_row(Slot, row, timestamp=row.created_at) for row in rows]
