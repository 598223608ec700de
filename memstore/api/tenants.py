"""Tenant-wide reads and GDPR erasure."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memstore.db.scrub import purge_full_text, truncate_wal
from memstore.repositories.access import AccessRepository
from memstore.repositories.blocks import BlockRepository
from memstore.repositories.episodes import EpisodeRepository
from memstore.repositories.erasure import lock_for_erasure
from memstore.repositories.facts import FactRepository
from memstore.repositories.tenants import TenantRepository
from memstore.tenancy import public_user_id, storage_user_id
from memstore.types import Profile
from memstore.validation import check_aware, check_identifier

if TYPE_CHECKING:
    pass


from memstore.api.base import StoreBase

__all__ = ["TenantAPI"]


class TenantAPI(StoreBase):
    """Tenant-wide reads and GDPR erasure."""

    async def profile(self, *, user_id: str | None = None) -> Profile:
        user = storage_user_id(user_id)
        async with self._read(user) as session:
            episodes = EpisodeRepository(session=session)
            facts = FactRepository(session=session)
            return Profile(
                user_id=public_user_id(user),
                episode_count=await episodes.count(user),
                fact_count=await facts.count_current(user),
                block_count=await BlockRepository(session=session).count(user),
                last_seen=await episodes.last_seen(user),
                recent_sessions=await episodes.recent_sessions(user, 10),
                sample_facts=await facts.latest_current(user, 10),
            )

    async def forget(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        before: datetime | None = None,
    ) -> int:
        """Erase memory; returns the number of rows deleted.

        With neither ``session_id`` nor ``before``, everything the tenant has in
        every table is erased (GDPR erasure). ``session_id`` and ``before``
        narrow it to matching episodes.
        """
        user = storage_user_id(user_id)
        if session_id is not None:
            check_identifier("session_id", session_id)
        if before is not None:
            check_aware("before", before)
        if session_id is None and before is None:
            await self.access_tracker.discard(user)
        async with self._write(user) as session:
            # Waits for an in-flight consolidation batch or access flush of this
            # tenant and keeps new ones out until the erase commits.
            await lock_for_erasure(session, user)
            if session_id is None and before is None:
                removed = await TenantRepository(session=session).erase(user)
                await purge_full_text(session, [t for t, n in removed.items() if n])
                deleted = sum(removed.values())
            else:
                deleted = await EpisodeRepository(session=session).delete(
                    user, session_id=session_id, before=before
                )
                await AccessRepository(session=session).prune_episodes(user)
                if deleted:
                    await purge_full_text(session, ["episodes"])
        if deleted:
            await truncate_wal(self.engine)
        return deleted
