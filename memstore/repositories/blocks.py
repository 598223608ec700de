from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.db.prepared import fetch
from memstore.db.unit import Reader
from memstore.errors import Conflict, LimitExceeded
from memstore.models import BlockRow, BlockVersionRow
from memstore.repositories.rows import by_key, from_row
from memstore.types import BlockVersion, MemoryBlock

__all__ = ["BlockRepository", "blocks_in_order"]

# A compare-and-swap that keeps losing means heavy contention on one block;
# give up with Conflict rather than spin.
_MAX_ATTEMPTS = 8


def _block(row: Any) -> MemoryBlock:
    """A block from a ``BlockRow``, or from a row of the table's columns."""
    return from_row(MemoryBlock, row)


# The tenant's blocks in pinned order: one statement of table columns, built once.
_IN_ORDER = (
    select(*BlockRow.__table__.c)
    .where(BlockRow.user_id == bindparam("user_id"))
    .order_by(BlockRow.pinned_order, BlockRow.name)
)


async def blocks_in_order(reader: Reader, user_id: TenantId) -> list[MemoryBlock]:
    """The user's pinned blocks, ordered by ``pinned_order`` (one statement, on the driver)."""
    return [_block(r) for r in await fetch(reader, _IN_ORDER, {"user_id": user_id})]


class BlockRepository:
    """Pinned working blocks with full version history and optimistic concurrency."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def get(self, user_id: TenantId, name: str) -> MemoryBlock | None:
        return await by_key(self._session, BlockRow, (user_id, name), _block)

    async def write(
        self,
        user_id: TenantId,
        name: str,
        edit: Callable[[str], str],
        *,
        char_limit: int,
        expected_version: int | None,
        now: datetime,
    ) -> MemoryBlock:
        """Apply ``edit`` to the block's current content (``""`` if new) as one new version."""
        for _ in range(_MAX_ATTEMPTS):
            current = await self.get(user_id, name)
            if expected_version is not None:
                found = current.version if current is not None else 0
                if found != expected_version:
                    raise Conflict(f"block {name!r} is at version {found}, not {expected_version}")
            content = edit(current.content if current is not None else "")
            if len(content) > char_limit:
                raise LimitExceeded(
                    f"block {name!r} would hold {len(content)} characters; "
                    f"the limit is {char_limit}"
                )
            if current is None:
                written = await self._try_create(user_id, name, content, now)
            else:
                written = await self._try_update(user_id, current, content, now)
            if written is not None:
                await self._session.execute(
                    insert(BlockVersionRow).values(
                        user_id=user_id,
                        name=name,
                        version=written.version,
                        content=content,
                        created_at=now,
                    )
                )
                return written
        raise Conflict(f"block {name!r} kept changing under us; try again")

    async def _try_create(
        self, user_id: TenantId, name: str, content: str, now: datetime
    ) -> MemoryBlock | None:
        # Read first, then insert the value: Citus cannot route an INSERT whose VALUES
        # hold a subquery ("subqueries are not supported within INSERT queries"). Two
        # concurrent creations may share an order either way; the name breaks the tie.
        next_order = await self._session.scalar(
            select(func.coalesce(func.max(BlockRow.pinned_order) + 1, 0)).where(
                BlockRow.user_id == user_id
            )
        )
        try:
            # A savepoint so losing a creation race does not abort the caller's transaction.
            async with self._session.begin_nested():
                await self._session.execute(
                    insert(BlockRow).values(
                        user_id=user_id,
                        name=name,
                        content=content,
                        pinned_order=next_order,
                        version=1,
                        updated_at=now,
                    )
                )
        except IntegrityError:
            return None
        return await self.get(user_id, name)

    async def _try_update(
        self, user_id: TenantId, current: MemoryBlock, content: str, now: datetime
    ) -> MemoryBlock | None:
        result = await self._session.execute(
            update(BlockRow)
            .where(
                BlockRow.user_id == user_id,
                BlockRow.name == current.name,
                BlockRow.version == current.version,
            )
            .values(content=content, version=current.version + 1, updated_at=now)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            return None
        return await self.get(user_id, current.name)

    async def history(self, user_id: TenantId, name: str) -> list[BlockVersion]:
        stmt = (
            select(BlockVersionRow)
            .where(BlockVersionRow.user_id == user_id, BlockVersionRow.name == name)
            .order_by(BlockVersionRow.version)
        )
        return [from_row(BlockVersion, r) for r in (await self._session.scalars(stmt)).all()]

    async def delete(self, user_id: TenantId, name: str) -> int:
        await self._session.execute(
            delete(BlockVersionRow).where(
                BlockVersionRow.user_id == user_id, BlockVersionRow.name == name
            )
        )
        result = await self._session.execute(
            delete(BlockRow).where(BlockRow.user_id == user_id, BlockRow.name == name)
        )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def count(self, user_id: TenantId) -> int:
        stmt = select(func.count()).select_from(BlockRow).where(BlockRow.user_id == user_id)
        return int((await self._session.scalar(stmt)) or 0)
