"""SQL of the LangGraph store integration; every statement filters on user_id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import case, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.langgraph_input import SEPARATOR
from memstore.core.tenancy import TenantId
from memstore.db.upsert import insert_for
from memstore.models import LangGraphItemRow

__all__ = ["SEPARATOR", "LangGraphRepository"]

Row = LangGraphItemRow


def _alive(now: datetime) -> Any:
    return or_(Row.expires_at.is_(None), Row.expires_at > now)


def _under(prefix: str) -> Any:
    """The namespace equals ``prefix`` or lies below it ("" = the whole tenant)."""
    # substr, not LIKE: SQLite's LIKE ignores case, and labels may hold % and _.
    below = prefix + SEPARATOR
    return or_(Row.namespace == prefix, func.substr(Row.namespace, 1, len(below)) == below)


class LangGraphRepository:
    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def get(self, user_id: TenantId, namespace: str, key: str, now: datetime) -> Row | None:
        stmt = select(Row).where(
            Row.user_id == user_id, Row.namespace == namespace, Row.key == key, _alive(now)
        )
        return (await self._session.scalars(stmt)).first()

    async def put(
        self,
        user_id: TenantId,
        namespace: str,
        key: str,
        value: Any,
        *,
        vectors: bytes | None,
        index_fields: list[str] | None = None,
        now: datetime,
        ttl_minutes: float | None,
        expires_at: datetime | None,
    ) -> None:
        insert = insert_for(self._session)
        stmt = insert(Row).values(
            user_id=user_id,
            namespace=namespace,
            key=key,
            value=value,
            vectors=vectors,
            index_fields=index_fields if vectors is not None else None,
            created_at=now,
            updated_at=now,
            ttl_minutes=ttl_minutes,
            expires_at=expires_at,
        )
        # An expired row still in the table is replaced as if new (created_at too).
        expired = Row.expires_at.is_not(None) & (Row.expires_at <= now)
        stmt = stmt.on_conflict_do_update(
            index_elements=[Row.user_id, Row.namespace, Row.key],
            set_={
                "value": stmt.excluded.value,
                "vectors": stmt.excluded.vectors,
                "index_fields": stmt.excluded.index_fields,
                "updated_at": stmt.excluded.updated_at,
                "ttl_minutes": stmt.excluded.ttl_minutes,
                "expires_at": stmt.excluded.expires_at,
                "created_at": case((expired, stmt.excluded.created_at), else_=Row.created_at),
            },
        )
        await self._session.execute(stmt)

    async def delete(self, user_id: TenantId, namespace: str, key: str) -> None:
        stmt = delete(Row).where(Row.user_id == user_id, Row.namespace == namespace, Row.key == key)
        await self._session.execute(stmt)

    async def under(
        self,
        user_id: TenantId,
        prefix: str,
        now: datetime,
        *,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[Row]:
        """Live items at or below ``prefix``, newest update first (LangGraph's order)."""
        stmt = select(Row).where(Row.user_id == user_id, _alive(now))
        if prefix:
            stmt = stmt.where(_under(prefix))
        stmt = stmt.order_by(Row.updated_at.desc(), Row.namespace, Row.key)
        if offset:
            stmt = stmt.offset(offset)
        if limit is not None:
            stmt = stmt.limit(limit)
        return list((await self._session.scalars(stmt)).all())

    async def namespaces(self, user_id: TenantId, now: datetime) -> list[str]:
        stmt = (
            select(Row.namespace)
            .where(Row.user_id == user_id, _alive(now))
            .group_by(Row.namespace)
            .order_by(Row.namespace)
        )
        return list((await self._session.scalars(stmt)).all())

    async def refresh(
        self, user_id: TenantId, items: list[tuple[str, str, datetime]], now: datetime
    ) -> None:
        """Set new expiries (namespace, key, expires_at) of items that are still live."""
        for namespace, key, expires_at in items:
            stmt = (
                update(Row)
                .where(
                    Row.user_id == user_id,
                    Row.namespace == namespace,
                    Row.key == key,
                    Row.ttl_minutes.is_not(None),
                    _alive(now),
                )
                .values(expires_at=expires_at)
            )
            await self._session.execute(stmt)

    async def sweep(self, user_id: TenantId, now: datetime) -> int:
        """Delete the tenant's expired items; returns how many."""
        stmt = delete(Row).where(
            Row.user_id == user_id, Row.expires_at.is_not(None), Row.expires_at <= now
        )
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
