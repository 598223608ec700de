"""Claims and consolidation marks of episodes, per tenant.

Postgres claims with row locks (``FOR UPDATE SKIP LOCKED``) inside the very
transaction that writes the facts, so a killed worker's claim vanishes with
its rollback. SQLite has no row locks; there a claim is a lease row
(``claimed_by``, ``claim_expires_at``) committed on its own, and the facts are
written later in a transaction that first checks the lease is still ours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, insert, select, text, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.db.crosstenant import cross_tenant
from memstore.db.errors import translated
from memstore.models import EpisodeConsolidationRow as State
from memstore.models import EpisodeRow
from memstore.repositories.episodes import episode_from_row
from memstore.types import Episode

__all__ = ["ConsolidationRepository"]

# First key of the two-int advisory lock space, so tenant locks can never
# collide with the single-bigint locks FactRepository takes per statement.
_ADVISORY_CLASS = 0x6D656D  # "mem"


def _tenant_lock_key(user_id: str) -> int:
    digest = hashlib.blake2b(user_id.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


def _consolidated() -> Any:
    return exists().where(
        State.user_id == EpisodeRow.user_id,
        State.episode_id == EpisodeRow.id,
        State.consolidated_at.is_not(None),
    )


class ConsolidationRepository:
    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def pending_users(self, user_id: str | None = None) -> list[str]:
        """Tenants with unconsolidated episodes, longest-waiting first."""
        oldest = func.min(EpisodeRow.occurred_at)
        stmt = select(EpisodeRow.user_id).where(~_consolidated())
        if user_id is not None:
            stmt = stmt.where(EpisodeRow.user_id == user_id)
        else:
            stmt = cross_tenant(stmt, "consolidation-scheduling")
        stmt = stmt.group_by(EpisodeRow.user_id).order_by(oldest, EpisodeRow.user_id)
        with translated("find pending episodes"):
            return list((await self._session.scalars(stmt)).all())

    async def count_pending(self, user_id: str | None = None) -> int:
        stmt = select(func.count()).select_from(EpisodeRow).where(~_consolidated())
        if user_id is not None:
            stmt = stmt.where(EpisodeRow.user_id == user_id)
        else:
            stmt = cross_tenant(stmt, "consolidation-scheduling")
        with translated("count pending episodes"):
            return int((await self._session.scalar(stmt)) or 0)

    def _oldest_pending(self, user_id: str, limit: int) -> Any:
        return (
            select(EpisodeRow)
            .where(EpisodeRow.user_id == user_id, ~_consolidated())
            .order_by(EpisodeRow.occurred_at, EpisodeRow.id)
            .limit(limit)
        )

    # ---- Postgres: row locks held by the writing transaction -----------------

    async def try_lock_tenant(self, user_id: str) -> bool:
        """Take the tenant's consolidation lock until commit, or say it is taken.

        One consolidator per tenant at a time keeps each tenant's episodes
        reconciled in time order (bi-temporal supersession depends on it).
        """
        with translated("lock tenant for consolidation"):
            got = await self._session.scalar(
                text("SELECT pg_try_advisory_xact_lock(:c, :k)"),
                {"c": _ADVISORY_CLASS, "k": _tenant_lock_key(user_id)},
            )
        return bool(got)

    async def lock_pending(self, user_id: str, limit: int) -> list[Episode]:
        """The tenant's oldest unconsolidated episodes, row-locked; locked ones skipped."""
        stmt = self._oldest_pending(user_id, limit).with_for_update(skip_locked=True, of=EpisodeRow)
        with translated("claim episodes"):
            rows = (await self._session.scalars(stmt)).all()
        return [episode_from_row(r) for r in rows]

    async def mark_consolidated(
        self, user_id: str, episode_ids: Sequence[str], now: datetime
    ) -> None:
        """Insert the marks; the primary key refuses a second consolidation (Conflict)."""
        if not episode_ids:
            return
        rows = [{"user_id": user_id, "episode_id": e, "consolidated_at": now} for e in episode_ids]
        with translated("mark episodes consolidated"):
            await self._session.execute(insert(State), rows)

    # ---- SQLite: leases -----------------------------------------------------------

    async def has_live_foreign_lease(self, user_id: str, worker: str, now: datetime) -> bool:
        stmt = select(
            exists().where(
                State.user_id == user_id,
                State.consolidated_at.is_(None),
                State.claimed_by.is_not(None),
                State.claimed_by != worker,
                State.claim_expires_at > now,
            )
        )
        with translated("check leases"):
            return bool(await self._session.scalar(stmt))

    async def lease_pending(
        self, user_id: str, limit: int, worker: str, now: datetime, expires_at: datetime
    ) -> list[Episode]:
        """Lease the tenant's oldest unconsolidated episodes to ``worker`` (expired leases too)."""
        with translated("claim episodes"):
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
            stmt = sqlite_insert(State).values(values)
            stmt = stmt.on_conflict_do_update(
                index_elements=[State.user_id, State.episode_id],
                set_={
                    "claimed_by": stmt.excluded.claimed_by,
                    "claim_expires_at": stmt.excluded.claim_expires_at,
                },
            )
            await self._session.execute(stmt)
        return [episode_from_row(r) for r in rows]

    async def still_leased(self, user_id: str, episode_ids: Sequence[str], worker: str) -> set[str]:
        """Which of ``episode_ids`` still exist, are leased to ``worker`` and unconsolidated.

        An expired lease that nobody took over still counts: the work is done and
        no one else can have done it. A forgotten episode never counts, even if
        its lease row were somehow left behind.
        """
        stmt = select(State.episode_id).where(
            State.user_id == user_id,
            State.episode_id.in_(list(episode_ids)),
            State.claimed_by == worker,
            State.consolidated_at.is_(None),
            exists().where(EpisodeRow.user_id == State.user_id, EpisodeRow.id == State.episode_id),
        )
        with translated("check leases"):
            return set((await self._session.scalars(stmt)).all())

    async def complete_leases(
        self, user_id: str, episode_ids: Sequence[str], worker: str, now: datetime
    ) -> int:
        stmt = (
            update(State)
            .where(
                State.user_id == user_id,
                State.episode_id.in_(list(episode_ids)),
                State.claimed_by == worker,
                State.consolidated_at.is_(None),
            )
            .values(consolidated_at=now, claimed_by=None, claim_expires_at=None)
        )
        with translated("mark episodes consolidated"):
            result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def release_leases(self, user_id: str, episode_ids: Sequence[str], worker: str) -> None:
        stmt = (
            update(State)
            .where(
                State.user_id == user_id,
                State.episode_id.in_(list(episode_ids)),
                State.claimed_by == worker,
                State.consolidated_at.is_(None),
            )
            .values(claimed_by=None, claim_expires_at=None)
        )
        with translated("release claims"):
            await self._session.execute(stmt)

    async def consolidated_ids(self, user_id: str) -> set[str]:
        stmt = select(State.episode_id).where(
            and_(State.user_id == user_id, State.consolidated_at.is_not(None))
        )
        return set((await self._session.scalars(stmt)).all())
