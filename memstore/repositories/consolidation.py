"""Claims and consolidation marks of episodes, per tenant.

A claim is a lease row (``claimed_by``, ``claim_expires_at``) committed in a
short transaction of its own; the facts are written later, in a second one
that first checks the lease is still ours, so no transaction, lock or
connection is held while an extractor runs. Where writers run at once (Postgres)
a transaction-scoped lock per tenant (:meth:`memstore.dialects.Dialect.lock`)
serialises the claim and write transactions of one tenant; serial writers
(SQLite's) need none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.db.crosstenant import cross_tenant
from memstore.db.upsert import insert_for
from memstore.dialects import Lock, dialect_for
from memstore.models import EpisodeConsolidationRow as State
from memstore.models import EpisodeRow
from memstore.repositories.episodes import episode_from_row
from memstore.types import Episode

__all__ = ["ConsolidationRepository"]

# First key of the two-int advisory lock space, so tenant locks can never
# collide with the single-bigint locks FactRepository takes per statement.
_ADVISORY_CLASS = 0x6D656D  # "mem"


def _tenant_lock(user_id: TenantId) -> Lock:
    digest = hashlib.blake2b(user_id.encode(), digest_size=4).digest()
    return Lock(int.from_bytes(digest, "big", signed=True), space=_ADVISORY_CLASS)


def _consolidated() -> Any:
    return exists().where(
        State.user_id == EpisodeRow.user_id,
        State.episode_id == EpisodeRow.id,
        State.consolidated_at.is_not(None),
    )


def _held_by(worker: str, user_id: str, episode_ids: Sequence[str]) -> list[Any]:
    """Which of the tenant's ``episode_ids`` ``worker`` leased and has not consolidated."""
    return [
        State.user_id == user_id,
        State.episode_id.in_(list(episode_ids)),
        State.claimed_by == worker,
        State.consolidated_at.is_(None),
    ]


class ConsolidationRepository:
    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def pending_users(self, user_id: TenantId | None = None) -> list[TenantId]:
        """Tenants with unconsolidated episodes, longest-waiting first."""
        oldest = func.min(EpisodeRow.occurred_at)
        stmt = select(EpisodeRow.user_id).where(~_consolidated())
        if user_id is not None:
            stmt = stmt.where(EpisodeRow.user_id == user_id)
        else:
            stmt = cross_tenant(stmt, "consolidation-scheduling")
        stmt = stmt.group_by(EpisodeRow.user_id).order_by(oldest, EpisodeRow.user_id)
        return [TenantId(u) for u in (await self._session.scalars(stmt)).all()]

    async def count_pending(self, user_id: TenantId | None = None) -> int:
        stmt = select(func.count()).select_from(EpisodeRow).where(~_consolidated())
        if user_id is not None:
            stmt = stmt.where(EpisodeRow.user_id == user_id)
        else:
            stmt = cross_tenant(stmt, "consolidation-scheduling")
        return int((await self._session.scalar(stmt)) or 0)

    def _oldest_pending(self, user_id: TenantId, limit: int) -> Any:
        return (
            select(EpisodeRow)
            .where(EpisodeRow.user_id == user_id, ~_consolidated())
            .order_by(EpisodeRow.occurred_at, EpisodeRow.id)
            .limit(limit)
        )

    # ---- one claim or write transaction per tenant at a time ----------------------

    async def try_lock_tenant(self, user_id: TenantId) -> bool:
        """Take the tenant's consolidation lock until this transaction ends, or say it is taken.

        Only ever held by a short claim or write transaction, never across an
        extraction: it keeps a claim from racing another worker's write (which
        would lease episodes that are being marked).
        """
        return await dialect_for(self._session).lock(
            self._session, _tenant_lock(user_id), wait=False
        )

    async def lock_tenant(self, user_id: TenantId) -> None:
        """Wait for the tenant's consolidation lock (held until this transaction ends)."""
        await dialect_for(self._session).lock(self._session, _tenant_lock(user_id))

    # ---- leases -------------------------------------------------------------------

    async def has_live_foreign_lease(self, user_id: TenantId, worker: str, now: datetime) -> bool:
        stmt = select(
            exists().where(
                State.user_id == user_id,
                State.consolidated_at.is_(None),
                State.claimed_by.is_not(None),
                State.claimed_by != worker,
                State.claim_expires_at > now,
            )
        )
        return bool(await self._session.scalar(stmt))

    async def lease_pending(
        self, user_id: TenantId, limit: int, worker: str, now: datetime, expires_at: datetime
    ) -> list[Episode]:
        """Lease the tenant's oldest unconsolidated episodes to ``worker`` (expired leases too).

        Returns only the episodes whose lease this statement really took: a row
        consolidated or leased to a live worker meanwhile is left alone.
        """
        rows = (await self._session.scalars(self._oldest_pending(user_id, limit))).all()
        if not rows:
            return []
        values = [
            {
                "user_id": user_id,
                "episode_id": r.id,
                "claimed_by": worker,
                "claim_expires_at": expires_at,
                "consolidated_at": None,
            }
            for r in rows
        ]
        stmt = insert_for(self._session)(State).values(values)
        stmt = stmt.on_conflict_do_update(
            index_elements=[State.user_id, State.episode_id],
            set_={
                "claimed_by": stmt.excluded.claimed_by,
                "claim_expires_at": stmt.excluded.claim_expires_at,
            },
            where=and_(
                State.consolidated_at.is_(None),
                or_(
                    State.claimed_by.is_(None),
                    State.claimed_by == worker,
                    State.claim_expires_at <= now,
                ),
            ),
        ).returning(State.episode_id)
        leased = set((await self._session.scalars(stmt)).all())
        return [episode_from_row(r) for r in rows if r.id in leased]

    async def still_leased(
        self, user_id: TenantId, episode_ids: Sequence[str], worker: str
    ) -> set[str]:
        """Which of ``episode_ids`` still exist, are leased to ``worker`` and unconsolidated.

        An expired lease that nobody took over still counts: the work is done and
        no one else can have done it. A forgotten episode never counts, even if
        its lease row were somehow left behind.
        """
        stmt = select(State.episode_id).where(
            *_held_by(worker, user_id, episode_ids),
            exists().where(EpisodeRow.user_id == State.user_id, EpisodeRow.id == State.episode_id),
        )
        return set((await self._session.scalars(stmt)).all())

    async def complete_leases(
        self, user_id: TenantId, episode_ids: Sequence[str], worker: str, now: datetime
    ) -> int:
        stmt = (
            update(State)
            .where(*_held_by(worker, user_id, episode_ids))
            .values(consolidated_at=now, claimed_by=None, claim_expires_at=None)
        )
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def release_leases(
        self, user_id: TenantId, episode_ids: Sequence[str], worker: str
    ) -> None:
        stmt = (
            update(State)
            .where(*_held_by(worker, user_id, episode_ids))
            .values(claimed_by=None, claim_expires_at=None)
        )
        await self._session.execute(stmt)

    async def consolidated_ids(self, user_id: TenantId) -> set[str]:
        stmt = select(State.episode_id).where(
            and_(State.user_id == user_id, State.consolidated_at.is_not(None))
        )
        return set((await self._session.scalars(stmt)).all())
