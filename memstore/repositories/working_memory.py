from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import and_, delete, func, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.db.crosstenant import cross_tenant
from memstore.db.upsert import insert_for
from memstore.models import WorkingMemoryCheckpointRow, WorkingMemoryRow

__all__ = ["ScopeKey", "StoredKey", "WorkingMemoryRepository"]

INTERNAL_PREFIX = "_"


class ScopeKey(NamedTuple):
    """A scope as stored: (project_id, agent_id, session_id), "" for an absent level."""

    project_id: str
    agent_id: str
    session_id: str


class StoredKey(NamedTuple):
    key: str
    value: Any
    expires_at: datetime | None


_KEY_COLUMNS = [
    WorkingMemoryRow.user_id,
    WorkingMemoryRow.project_id,
    WorkingMemoryRow.agent_id,
    WorkingMemoryRow.session_id,
    WorkingMemoryRow.key,
]


def _in_scope(model: Any, user_id: TenantId, scope: ScopeKey) -> list[Any]:
    return [
        model.user_id == user_id,
        model.project_id == scope.project_id,
        model.agent_id == scope.agent_id,
        model.session_id == scope.session_id,
    ]


def _row(user_id: str, scope: ScopeKey, key: StoredKey, now: datetime) -> dict[str, Any]:
    """The values of one key's row."""
    return {"user_id": user_id, **scope._asdict(), **key._asdict(), "updated_at": now}


def _alive(now: datetime) -> Any:
    # Expiry is decided in SQL at read time, so a key is invisible from the
    # very moment it expires, whether or not the sweep has run yet.
    return or_(WorkingMemoryRow.expires_at.is_(None), WorkingMemoryRow.expires_at > now)


def _internal() -> Any:
    return WorkingMemoryRow.key.startswith(INTERNAL_PREFIX, autoescape=True)


class WorkingMemoryRepository:
    """Scoped key/value rows with expiry, and checkpoints, of one tenant at a time."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    def _insert(self) -> Any:
        return insert_for(self._session)(WorkingMemoryRow)

    @staticmethod
    def _overwrite_on_conflict(stmt: Any) -> Any:
        """Make an insert of a key that already exists replace its value and expiry."""
        return stmt.on_conflict_do_update(
            index_elements=_KEY_COLUMNS,
            set_={
                "value": stmt.excluded.value,
                "expires_at": stmt.excluded.expires_at,
                "updated_at": stmt.excluded.updated_at,
            },
        )

    def _where(self, user_id: TenantId, scope: ScopeKey) -> list[Any]:
        return _in_scope(WorkingMemoryRow, user_id, scope)

    # ---- keys ---------------------------------------------------------------

    async def get(
        self, user_id: TenantId, scope: ScopeKey, key: str, now: datetime, *, lock: bool = False
    ) -> tuple[bool, Any]:
        """(found, value) of a live key; ``lock`` holds its row until commit (Postgres)."""
        stmt = select(WorkingMemoryRow.value).where(
            *self._where(user_id, scope), WorkingMemoryRow.key == key, _alive(now)
        )
        if lock:
            stmt = stmt.with_for_update()
        rows = (await self._session.execute(stmt)).all()
        return (True, rows[0].value) if rows else (False, None)

    async def live(
        self, user_id: TenantId, scope: ScopeKey, now: datetime, *, internal: bool | None = None
    ) -> list[StoredKey]:
        """Live keys ordered by name; ``internal`` True/False selects only those kinds."""
        stmt = select(
            WorkingMemoryRow.key, WorkingMemoryRow.value, WorkingMemoryRow.expires_at
        ).where(*self._where(user_id, scope), _alive(now))
        if internal is True:
            stmt = stmt.where(_internal())
        elif internal is False:
            stmt = stmt.where(~_internal())
        stmt = stmt.order_by(WorkingMemoryRow.key)
        rows = (await self._session.execute(stmt)).all()
        return [StoredKey(r.key, r.value, r.expires_at) for r in rows]

    async def put(
        self,
        user_id: TenantId,
        scope: ScopeKey,
        key: str,
        value: Any,
        *,
        expires_at: datetime | None,
        now: datetime,
    ) -> None:
        stmt = self._insert().values(_row(user_id, scope, StoredKey(key, value, expires_at), now))
        stmt = self._overwrite_on_conflict(stmt)
        await self._session.execute(stmt)

    async def put_if_absent(
        self, user_id: TenantId, scope: ScopeKey, key: str, value: Any, *, now: datetime
    ) -> None:
        """Create a never-expiring key unless it exists (used for internal state rows)."""
        row = _row(user_id, scope, StoredKey(key, value, None), now)
        stmt = self._insert().values(row).on_conflict_do_nothing()
        await self._session.execute(stmt)

    async def delete(self, user_id: TenantId, scope: ScopeKey, key: str, now: datetime) -> bool:
        """Delete a key; True if it was live (an expired row goes too, but silently)."""
        stmt = (
            delete(WorkingMemoryRow)
            .where(*self._where(user_id, scope), WorkingMemoryRow.key == key)
            .returning(WorkingMemoryRow.expires_at)
        )
        rows = (await self._session.execute(stmt)).all()
        return any(r.expires_at is None or r.expires_at > now for r in rows)

    async def delete_all(
        self, user_id: TenantId, scope: ScopeKey, now: datetime, *, internal: bool | None = None
    ) -> int:
        """Delete keys of the scope (``internal`` as in :meth:`live`); returns the live count."""
        conditions = self._where(user_id, scope)
        if internal is True:
            conditions.append(_internal())
        elif internal is False:
            conditions.append(~_internal())
        stmt = delete(WorkingMemoryRow).where(*conditions).returning(WorkingMemoryRow.expires_at)
        rows = (await self._session.execute(stmt)).all()
        return sum(r.expires_at is None or r.expires_at > now for r in rows)

    async def insert_many(
        self, user_id: TenantId, scope: ScopeKey, keys: list[StoredKey], now: datetime
    ) -> None:
        if not keys:
            return
        rows = [_row(user_id, scope, k, now) for k in keys]
        # An upsert, so a key another process set between our delete and this
        # insert is overwritten by the restore instead of failing it.
        stmt = self._insert()
        stmt = self._overwrite_on_conflict(stmt)
        await self._session.execute(stmt, rows)

    async def sweep(self, user_id: TenantId, now: datetime) -> int:
        """Delete the tenant's expired keys; returns how many."""
        stmt = delete(WorkingMemoryRow).where(
            WorkingMemoryRow.user_id == user_id,
            WorkingMemoryRow.expires_at.is_not(None),
            WorkingMemoryRow.expires_at <= now,
        )
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def tenants_with_expired(self, now: datetime) -> list[TenantId]:
        """Stored tenant ids holding an expired key: whom an operator's sweep must visit."""
        stmt = (
            select(WorkingMemoryRow.user_id)
            .where(WorkingMemoryRow.expires_at.is_not(None), WorkingMemoryRow.expires_at <= now)
            .group_by(WorkingMemoryRow.user_id)
            .order_by(WorkingMemoryRow.user_id)
        )
        stmt = cross_tenant(stmt, "gc-all-tenants")
        return [TenantId(u) for u in (await self._session.scalars(stmt)).all()]

    # ---- checkpoints -----------------------------------------------------------

    def _checkpoint_where(self, user_id: TenantId, scope: ScopeKey) -> list[Any]:
        return _in_scope(WorkingMemoryCheckpointRow, user_id, scope)

    async def add_checkpoint(
        self,
        user_id: TenantId,
        scope: ScopeKey,
        checkpoint_id: str,
        description: str,
        data: dict[str, Any],
        now: datetime,
    ) -> None:
        await self._session.execute(
            insert(WorkingMemoryCheckpointRow).values(
                user_id=user_id,
                **scope._asdict(),
                id=checkpoint_id,
                description=description,
                data=data,
                created_at=now,
            )
        )

    async def checkpoint_data(
        self, user_id: TenantId, scope: ScopeKey, checkpoint_id: str
    ) -> dict[str, Any] | None:
        stmt = select(WorkingMemoryCheckpointRow.data).where(
            *self._checkpoint_where(user_id, scope),
            WorkingMemoryCheckpointRow.id == checkpoint_id,
        )
        rows = (await self._session.execute(stmt)).all()
        return dict(rows[0].data) if rows else None

    async def checkpoints(self, user_id: TenantId, scope: ScopeKey) -> list[dict[str, Any]]:
        stmt = (
            select(
                WorkingMemoryCheckpointRow.id,
                WorkingMemoryCheckpointRow.description,
                WorkingMemoryCheckpointRow.created_at,
            )
            .where(*self._checkpoint_where(user_id, scope))
            .order_by(WorkingMemoryCheckpointRow.created_at, WorkingMemoryCheckpointRow.id)
        )
        rows = (await self._session.execute(stmt)).all()
        return [
            {"id": r.id, "description": r.description, "created_at": r.created_at} for r in rows
        ]

    async def delete_checkpoint(
        self, user_id: TenantId, scope: ScopeKey, checkpoint_id: str
    ) -> bool:
        stmt = delete(WorkingMemoryCheckpointRow).where(
            *self._checkpoint_where(user_id, scope),
            WorkingMemoryCheckpointRow.id == checkpoint_id,
        )
        result = await self._session.execute(stmt)
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def count_checkpoints(self, user_id: TenantId, scope: ScopeKey) -> int:
        stmt = (
            select(func.count())
            .select_from(WorkingMemoryCheckpointRow)
            .where(and_(*self._checkpoint_where(user_id, scope)))
        )
        return int((await self._session.scalar(stmt)) or 0)
