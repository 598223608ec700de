"""Tenant-wide reads and GDPR erasure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memstore.core.tenancy import public_user_id, storage_user_id
from memstore.core.validation import check_aware, check_identifier, check_limit
from memstore.db.scrub import purge_full_text, truncate_wal
from memstore.repositories.access import AccessRepository
from memstore.repositories.blocks import BlockRepository
from memstore.repositories.changes import ChangeLogRepository
from memstore.repositories.episodes import EpisodeRepository
from memstore.repositories.erasure import lock_for_erasure
from memstore.repositories.facts import FactRepository
from memstore.repositories.snapshot import SnapshotRepository
from memstore.repositories.tenants import TenantRepository, tenant_tables
from memstore.search.tables import EpisodeSearchBackend
from memstore.search.vector_cache import forget_search_version
from memstore.services.access import AccessTracker
from memstore.services.base import Service
from memstore.types import Profile

__all__ = ["TenantService"]


class TenantService(Service):
    """Tenant-wide reads and GDPR erasure."""

    access_tracker: AccessTracker
    episode_search: EpisodeSearchBackend

    async def profile(self, *, user_id: str | None = None) -> Profile:
        """What is stored for a tenant: counts, last seen, recent sessions, sample facts."""
        user = storage_user_id(user_id)
        async with self.db.read(user) as session:
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

    async def list_tenants_cross_tenant(self, *, limit: int = 1000) -> list[str]:
        """Every tenant with stored rows (:data:`memstore.ANONYMOUS` is the anonymous one), sorted.

        An administrative, cross-tenant read (ids only) for operator tools such
        as ``memstore inspect``; agent code never needs it.
        """
        check_limit("limit", limit)
        async with self.db.read() as session:
            stored = await TenantRepository(session=session).list_all_tenants_cross_tenant(
                limit=limit
            )
        return [public_user_id(u) for u in stored]

    async def snapshot(
        self, *, user_id: str | None = None, max_rows_per_table: int = 2000
    ) -> dict[str, Any]:
        """A bounded look at one tenant, for humans (``memstore inspect``).

        Every tenant table's rows (newest first where a table has a time, at
        most ``max_rows_per_table``) without vectors or search text, and each
        table's full row count, read in one snapshot. Records no access. Use
        :meth:`export` for a complete, lossless dump.
        """
        user = storage_user_id(user_id)
        check_limit("max_rows_per_table", max_rows_per_table, maximum=1_000_000)
        tables: dict[str, list[dict[str, Any]]] = {}
        totals: dict[str, int] = {}
        async with self.db.read(user, snapshot=True) as session:
            repo = SnapshotRepository(session=session)
            for table in reversed(tenant_tables()):
                tables[table.name] = await repo.rows(user, table, max_rows_per_table)
                totals[table.name] = await repo.count(user, table)
        return {
            "user_id": public_user_id(user),
            "taken_at": self.db.now().isoformat(),
            "tables": tables,
            "totals": totals,
        }

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
            await self.access_tracker.discard(user, wait=self.db.joined_session is None)
        async with self.db.write(user) as session:
            # Waits for an in-flight consolidation batch or access flush of this
            # tenant and keeps new ones out until the erase commits.
            await lock_for_erasure(session, user)
            if session_id is None and before is None:
                # The tenant's waiters wake (on commit) and find its log gone.
                changes = ChangeLogRepository(session=session)
                head = await changes.head(user)
                if head is not None:
                    await changes.hint(head.epoch)
                removed = await TenantRepository(session=session).erase(user)
                await forget_search_version(session, user)
                await purge_full_text(session, [t for t, n in removed.items() if n])
                deleted = sum(removed.values())
            else:
                deleted = await EpisodeRepository(session=session).delete(
                    user, session_id=session_id, before=before
                )
                await AccessRepository(session=session).prune_episodes(user)
                if deleted:
                    await purge_full_text(session, ["episodes"])
        self.episode_search.drop(user)
        # On a bound store nothing is committed yet (the caller commits later) and
        # a checkpoint would only wait for the caller's own write lock.
        if deleted and self.db.joined_session is None:
            await truncate_wal(self.db.engine)
        return deleted
