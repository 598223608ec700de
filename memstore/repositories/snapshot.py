"""A bounded, vector-free read of one tenant's tables (for looking, not for dumps)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.repositories.tenants import jsonable

__all__ = ["SKIPPED_COLUMNS", "SnapshotRepository"]

# Vectors and derived search text are large and say nothing to a human reader.
SKIPPED_COLUMNS = frozenset({"user_id", "embedding", "passages", "search_text"})
# Newest first where a table has a natural time, so a cut keeps the recent rows.
_NEWEST_FIRST = {
    "episodes": "occurred_at",
    "facts": "recorded_at",
    "block_versions": "version",
    "slots": "slot_index",
    "threads": "last_activity_at",
    "working_memory": "updated_at",
    "working_memory_checkpoints": "created_at",
    "access_stats": "access_count",
}


class SnapshotRepository:
    """Rows of one tenant, every statement filtered by ``user_id``."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def rows(self, user_id: TenantId, table: Table, limit: int) -> list[dict[str, Any]]:
        columns = [c for c in table.columns if c.name not in SKIPPED_COLUMNS]
        order = table.c.get(_NEWEST_FIRST.get(table.name, ""))
        stmt = select(*columns).where(table.c.user_id == user_id)
        stmt = stmt.order_by(order.desc()) if order is not None else stmt
        stmt = stmt.order_by(*table.primary_key.columns).limit(limit)
        result = await self._session.execute(stmt)
        return [{k: jsonable(v) for k, v in row.items()} for row in result.mappings()]

    async def count(self, user_id: TenantId, table: Table) -> int:
        stmt = select(func.count()).select_from(table).where(table.c.user_id == user_id)
        return int(await self._session.scalar(stmt) or 0)
