from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from sqlalchemy import Table, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.db.base import Base
from memstore.db.errors import translated

__all__ = ["TenantRepository", "tenant_tables"]


def tenant_tables() -> list[Table]:
    """Every registered table that holds tenant rows, children before parents.

    Driven by the metadata so a table added later is covered by forget and
    export without anyone remembering to list it.
    """
    return [t for t in reversed(Base.metadata.sorted_tables) if "user_id" in t.c]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if hasattr(value, "tolist"):  # numpy / pgvector values
        return value.tolist()
    return value


class TenantRepository:
    """Whole-tenant operations: erase and dump, across every tenant table."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def erase(self, user_id: str) -> dict[str, int]:
        removed: dict[str, int] = {}
        with translated("forget tenant"):
            for table in tenant_tables():
                result = await self._session.execute(
                    delete(table).where(table.c.user_id == user_id)
                )
                removed[table.name] = int(result.rowcount or 0)  # type: ignore[attr-defined]
        return removed

    async def rows(self, user_id: str, table: Table) -> AsyncIterator[dict[str, Any]]:
        """The tenant's rows of ``table`` in primary-key order, JSON-ready, streamed."""
        stmt = (
            select(table)
            .where(table.c.user_id == user_id)
            .order_by(*table.primary_key.columns)
        )
        result = await self._session.stream(stmt)
        async for row in result.mappings():
            yield {k: _jsonable(v) for k, v in row.items() if k != "user_id"}
