"""The change log: recorded inside each writing transaction, read by ``store.changes()``.

:meth:`ChangeLogRepository.record` claims the tenant's next numbers with one
upsert on ``change_heads`` that reads and increments ``last_seq`` (as a
thread's slot index is claimed). On Postgres the upsert keeps the head row
locked until commit, so a second writer of the tenant waits and numbers after
the first: a tenant's changes are numbered in commit order, and a reader that
has seen number n has seen every number below it. SQLite write transactions
are serial (BEGIN IMMEDIATE), which gives the same. Call it last in the
transaction: the head lock is then held only for the commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.db.crosstenant import cross_tenant
from memstore.db.signal import CHANNEL, HINTS_KEY, hint_of
from memstore.db.unit import Reader
from memstore.db.upsert import insert_for
from memstore.dialects import dialect_for
from memstore.models.changes import ChangeHeadRow, ChangeRow
from memstore.types import ChangeKind, new_id

__all__ = ["ChangeEntry", "ChangeHead", "ChangeLogRepository", "LoggedChange", "read_head"]


@dataclass(frozen=True)
class ChangeEntry:
    """A change to record: its kind, key and (thread appends) slot index."""

    kind: ChangeKind
    key: str
    slot_index: int | None = None


@dataclass(frozen=True)
class ChangeHead:
    epoch: str
    last_seq: int
    pruned_through: int

    @property
    def hint(self) -> str:
        return hint_of(self.epoch)


@dataclass(frozen=True)
class LoggedChange:
    seq: int
    kind: ChangeKind
    key: str
    slot_index: int | None
    created_at: datetime


async def read_head(reader: Reader, user_id: TenantId) -> ChangeHead | None:
    """The tenant's change-log head (None: no change recorded yet); one Core statement."""
    stmt = select(ChangeHeadRow.epoch, ChangeHeadRow.last_seq, ChangeHeadRow.pruned_through).where(
        ChangeHeadRow.user_id == user_id
    )
    row = (await reader.execute(stmt)).first()
    return None if row is None else ChangeHead(str(row[0]), int(row[1]), int(row[2]))


class ChangeLogRepository:
    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def record(
        self, user_id: TenantId, entries: Sequence[ChangeEntry], *, now: datetime
    ) -> None:
        """Append ``entries`` to the tenant's log and send the wake-up hint on commit."""
        if not entries:
            return
        n = len(entries)
        stmt = insert_for(self._session)(ChangeHeadRow).values(
            user_id=user_id, epoch=new_id(), last_seq=n, pruned_through=0
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[ChangeHeadRow.user_id],
            set_={"last_seq": ChangeHeadRow.last_seq + n},
        ).returning(ChangeHeadRow.last_seq, ChangeHeadRow.epoch)
        last, epoch = (await self._session.execute(stmt)).one()
        first = int(last) - n + 1
        rows = [
            {
                "user_id": user_id,
                "seq": first + i,
                "kind": str(e.kind),
                "key": e.key,
                "slot_index": e.slot_index,
                "created_at": now,
            }
            for i, e in enumerate(entries)
        ]
        await self._session.execute(insert(ChangeRow), rows)
        await self.hint(epoch)

    async def hint(self, epoch: str) -> None:
        """Wake waiters of this tenant once the transaction commits (never if it rolls back)."""
        hint = hint_of(epoch)
        await dialect_for(self._session).announce(self._session, CHANNEL, hint)
        self._session.info.setdefault(HINTS_KEY, set()).add(hint)

    async def head(self, user_id: TenantId) -> ChangeHead | None:
        return await read_head(self._session, user_id)

    async def new_epoch(self, user_id: TenantId) -> None:
        """Give the tenant's log (restored by an import) an epoch of its own.

        A dump carries the log's head: kept as is, the restored log would reuse
        the source's epoch and numbers, and a position taken from the source
        after the dump would silently skip the new changes that reuse them. With
        a new epoch every older position is reported as ``forget``. The counter
        is also moved past every restored change, so the next number is unused.
        Wakes the tenant's waiters on commit: the restored changes are theirs to read.
        """
        head = await self.head(user_id)
        if head is None:
            return
        newest = await self._session.scalar(
            select(func.max(ChangeRow.seq)).where(ChangeRow.user_id == user_id)
        )
        epoch = new_id()
        await self._session.execute(
            update(ChangeHeadRow)
            .where(ChangeHeadRow.user_id == user_id)
            .values(
                epoch=epoch,
                last_seq=max(head.last_seq, head.pruned_through, int(newest or 0)),
            )
        )
        await self.hint(epoch)

    async def read(
        self,
        user_id: TenantId,
        *,
        after: int,
        kinds: Sequence[ChangeKind] | None,
        limit: int,
    ) -> list[LoggedChange]:
        """The tenant's changes numbered above ``after``, in order, at most ``limit``."""
        stmt = select(ChangeRow).where(ChangeRow.user_id == user_id, ChangeRow.seq > after)
        if kinds is not None:
            stmt = stmt.where(ChangeRow.kind.in_([str(k) for k in kinds]))
        stmt = stmt.order_by(ChangeRow.seq).limit(limit)
        return [
            LoggedChange(int(r.seq), ChangeKind(r.kind), r.key, r.slot_index, r.created_at)
            for r in (await self._session.scalars(stmt)).all()
        ]

    async def prune(self, user_id: TenantId, cutoff: datetime) -> int:
        """Delete the tenant's changes recorded before ``cutoff``; returns how many."""
        newest = await self._session.scalar(
            select(func.max(ChangeRow.seq)).where(
                ChangeRow.user_id == user_id, ChangeRow.created_at < cutoff
            )
        )
        if newest is None:
            return 0
        # By number, not by time: what remains is always a suffix of the log, so
        # pruned_through says exactly which positions can no longer be resumed
        # (and only grows: every number up to it is gone already).
        result = await self._session.execute(
            delete(ChangeRow).where(ChangeRow.user_id == user_id, ChangeRow.seq <= newest)
        )
        await self._session.execute(
            update(ChangeHeadRow)
            .where(ChangeHeadRow.user_id == user_id)
            .values(pruned_through=int(newest))
        )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def tenants_with_changes_before(self, cutoff: datetime) -> list[TenantId]:
        """Stored tenant ids with a change older than ``cutoff``: whom gc's retention visits."""
        stmt = (
            select(ChangeRow.user_id)
            .where(ChangeRow.created_at < cutoff)
            .group_by(ChangeRow.user_id)
            .order_by(ChangeRow.user_id)
        )
        stmt = cross_tenant(stmt, "gc-all-tenants")
        return [TenantId(u) for u in (await self._session.scalars(stmt)).all()]
