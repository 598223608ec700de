from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, case, column, delete, exists, or_, select, values
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.db.upsert import insert_for
from memstore.models import AccessStatRow, BlockRow, EpisodeRow, FactRow
from memstore.repositories.rows import from_row
from memstore.types import AccessStat

__all__ = ["AccessDelta", "AccessRepository"]

# Five bind parameters per row; stays far below SQLite's variable limit.
_ROWS_PER_STATEMENT = 500


@dataclass(frozen=True)
class AccessDelta:
    """Accesses of one item buffered since the last flush."""

    user_id: TenantId
    kind: str
    item_id: str
    count: int
    last_accessed_at: datetime


def _item_exists(user_id: TenantId, item: Any) -> Any:
    """The counted item (episode id, logical fact id or block name) of ``user_id`` still exists."""
    # Kinds are checked by record_access; anything else is never written.
    return or_(
        and_(
            item.kind == "episode",
            exists().where(EpisodeRow.user_id == user_id, EpisodeRow.id == item.item_id),
        ),
        # Current version only: retracted facts are never recalled, and this is
        # what the partial unique index (user_id, fact_id) answers.
        and_(
            item.kind == "fact",
            exists().where(
                FactRow.user_id == user_id,
                FactRow.fact_id == item.item_id,
                FactRow.superseded_at.is_(None),
            ),
        ),
        and_(
            item.kind == "block",
            exists().where(BlockRow.user_id == user_id, BlockRow.name == item.item_id),
        ),
    )


class AccessRepository:
    """Access counters; every statement filters by ``user_id``."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def add(self, deltas: Sequence[AccessDelta]) -> None:
        """Add buffered counts, tenant by tenant (one row per item)."""
        ordered = sorted(deltas, key=lambda d: (d.user_id, d.kind, d.item_id))
        for user_id in sorted({d.user_id for d in ordered}):
            own = [d for d in ordered if d.user_id == user_id]
            for start in range(0, len(own), _ROWS_PER_STATEMENT):
                await self._upsert(user_id, own[start : start + _ROWS_PER_STATEMENT])

    async def _upsert(self, user_id: TenantId, deltas: Sequence[AccessDelta]) -> None:
        # Only items that still exist: counts buffered before a forget must not
        # re-create the rows of an erased item or tenant (the caller holds the tenant's
        # erasure guard, so a forget cannot commit between this read and the write).
        # A read, then a write, each naming the tenant as a value: an INSERT … SELECT
        # would be planned through the coordinator on Citus, and a correlated check
        # of a VALUES list against several tenants' tables cannot run there at all.
        buffered = (
            values(column("kind", String), column("item_id", String), name="buffered")
            .data([(d.kind, d.item_id) for d in deltas])
            .cte("buffered")
        )
        alive = select(buffered.c.kind, buffered.c.item_id).where(_item_exists(user_id, buffered.c))
        existing = {(r.kind, r.item_id) for r in (await self._session.execute(alive)).all()}
        rows = [
            {
                "user_id": user_id,
                "kind": d.kind,
                "item_id": d.item_id,
                "access_count": d.count,
                "last_accessed_at": d.last_accessed_at,
            }
            for d in deltas
            if (d.kind, d.item_id) in existing
        ]
        if not rows:
            return
        stmt = insert_for(self._session)(AccessStatRow)
        table = AccessStatRow.__table__.c
        stmt = stmt.on_conflict_do_update(
            index_elements=[table.user_id, table.kind, table.item_id],
            set_={
                "access_count": table.access_count + stmt.excluded.access_count,
                "last_accessed_at": case(
                    (
                        stmt.excluded.last_accessed_at > table.last_accessed_at,
                        stmt.excluded.last_accessed_at,
                    ),
                    else_=table.last_accessed_at,
                ),
            },
        )
        # In the callers' fixed key order, so two processes flushing overlapping
        # items take row locks in the same order and cannot deadlock.
        await self._session.execute(stmt, rows)

    async def counts(self, user_id: TenantId, kind: str, item_ids: Sequence[str]) -> dict[str, int]:
        if not item_ids:
            return {}
        stmt = select(AccessStatRow.item_id, AccessStatRow.access_count).where(
            AccessStatRow.user_id == user_id,
            AccessStatRow.kind == kind,
            AccessStatRow.item_id.in_(sorted(set(item_ids))),
        )
        rows = (await self._session.execute(stmt)).all()
        return {r.item_id: int(r.access_count) for r in rows}

    async def hottest(self, user_id: TenantId, kind: str | None, limit: int) -> list[AccessStat]:
        """Most-accessed items first; the most recently accessed wins a tie."""
        stmt = select(AccessStatRow).where(AccessStatRow.user_id == user_id)
        if kind is not None:
            stmt = stmt.where(AccessStatRow.kind == kind)
        stmt = stmt.order_by(
            AccessStatRow.access_count.desc(),
            AccessStatRow.last_accessed_at.desc(),
            AccessStatRow.kind,
            AccessStatRow.item_id,
        ).limit(limit)
        rows = (await self._session.scalars(stmt)).all()
        return [from_row(AccessStat, r, access_count=int(r.access_count)) for r in rows]

    async def prune_episodes(self, user_id: TenantId) -> int:
        """Drop counters of the tenant's episodes that no longer exist (after a forget)."""
        gone = ~exists().where(
            EpisodeRow.user_id == user_id, EpisodeRow.id == AccessStatRow.item_id
        )
        stmt = delete(AccessStatRow).where(
            AccessStatRow.user_id == user_id, AccessStatRow.kind == "episode", gone
        )
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
