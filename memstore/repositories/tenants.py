from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Column, String, Table, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import TypeDecorator

from memstore.core.tenancy import TenantId
from memstore.core.validation import check_storable
from memstore.db.base import Base
from memstore.db.crosstenant import cross_tenant
from memstore.dialects import Lock, dialect_for
from memstore.errors import InvalidInput
from memstore.repositories.import_checks import import_record

__all__ = [
    "TenantRepository",
    "from_jsonable",
    "jsonable",
    "tenant_table",
    "tenant_tables",
]


def tenant_tables() -> list[Table]:
    """Every registered table that holds tenant rows, children before parents.

    Driven by the metadata so a table added later is covered by forget and
    export without anyone remembering to list it.
    """
    return [t for t in reversed(Base.metadata.sorted_tables) if "user_id" in t.c]


def tenant_table(name: object) -> Table:
    """The tenant table called ``name``; InvalidInput for anything else."""
    for table in tenant_tables():
        if table.name == name:
            return table
    raise InvalidInput(f"unknown tenant table {name!r}")


def _python_type(column: Column[Any]) -> Any:
    kind = column.type
    while isinstance(kind, TypeDecorator):  # e.g. UTCDateTime: what it stores
        kind = kind.impl_instance
    try:
        return kind.python_type
    except NotImplementedError:  # e.g. pgvector: its bind processor takes the list
        return None


def from_jsonable(column: Column[Any], value: Any) -> Any:
    """Inverse of the export encoding (:func:`_jsonable`), driven by the column's type.

    Strings go back to datetimes and bytes where the column stores those; all
    other values (JSON documents, lists for vector types) pass through to the
    column type's own bind processing.
    """
    if value is None:
        return None
    where = f"{column.table.name}.{column.name}"
    # Same rules as the API's validation, so a dump a backend accepted is
    # accepted by every backend (SQLite would store NUL or overlong ids).
    check_storable(where, value)
    length = getattr(column.type, "length", None)
    if (
        isinstance(value, str)
        and isinstance(column.type, String)
        and length
        and (len(value) > length)
    ):
        raise InvalidInput(f"{where}: longer than {length} characters")
    kind = _python_type(column)
    try:
        if kind is datetime and isinstance(value, str):
            return datetime.fromisoformat(value)
        if kind is bytes and isinstance(value, str) and not isinstance(column.type, TypeDecorator):
            return base64.b64decode(value, validate=True)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
    except (ValueError, binascii.Error) as exc:
        raise InvalidInput(f"{where}: bad value {value!r}: {exc}") from exc
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if hasattr(value, "tolist"):  # numpy / pgvector values
        return value.tolist()
    return value


# Passage vectors are recomputed on import (by the importing store's embedder),
# and would multiply a dump's size by the number of passages.
_NOT_DUMPED = frozenset({"user_id", "passages"})


def jsonable(value: Any) -> Any:
    """A column value as export writes it (ISO datetimes, base64 bytes, lists)."""
    return _jsonable(value)


class TenantRepository:
    """Whole-tenant operations: erase and dump, across every tenant table."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    async def erase(self, user_id: TenantId) -> dict[str, int]:
        removed: dict[str, int] = {}
        for table in tenant_tables():
            result = await self._session.execute(delete(table).where(table.c.user_id == user_id))
            removed[table.name] = int(result.rowcount or 0)  # type: ignore[attr-defined]
        return removed

    async def rows(self, user_id: TenantId, table: Table) -> AsyncIterator[dict[str, Any]]:
        """The tenant's rows of ``table`` in primary-key order, JSON-ready, streamed."""
        stmt = select(table).where(table.c.user_id == user_id).order_by(*table.primary_key.columns)
        result = await self._session.stream(stmt)
        async for row in result.mappings():
            yield {k: _jsonable(v) for k, v in row.items() if k not in _NOT_DUMPED}

    async def list_all_tenants_cross_tenant(self, *, limit: int) -> list[str]:
        """Stored ids of every tenant that has rows in any table, sorted.

        The one deliberate cross-tenant read (the inspector's tenant picker): it
        returns ids only, never row contents. Under row-level security it sees
        only what the connection's role may see.
        """
        ids: set[str] = set()
        for table in tenant_tables():
            stmt = cross_tenant(
                select(table.c.user_id).distinct().order_by(table.c.user_id).limit(limit),
                "inspector-tenant-list",
            )
            ids.update(str(u) for u in (await self._session.scalars(stmt)).all())
        return sorted(ids)[:limit]

    async def has_rows(self, user_id: TenantId) -> bool:
        for table in tenant_tables():
            stmt = select(table.c.user_id).where(table.c.user_id == user_id).limit(1)
            if (await self._session.execute(stmt)).first() is not None:
                return True
        return False

    async def insert_rows(
        self,
        user_id: TenantId,
        table: Table,
        rows: Sequence[Any],
        *,
        start: int = 0,
        dim: int | None = None,
    ) -> int:
        """Insert exported rows (JSON form, without ``user_id``) for ``user_id``.

        Each row passes the write API's validation first (:func:`import_record`;
        ``start`` is the position of ``rows[0]`` among the table's rows, ``dim``
        the store's embedding width).
        """
        if not rows:
            return 0
        values = [
            import_record(table, start + i, row, user_id=user_id, dim=dim)
            for i, row in enumerate(rows)
        ]
        await self._session.execute(insert(table), values)
        return len(values)

    async def lock_for_import(self, user_id: TenantId) -> None:
        """Serialise imports into one tenant.

        Held until commit, so a second import waits, then finds the first one's
        rows and refuses with Conflict instead of merging into them.
        """
        digest = hashlib.blake2b(f"import\x1f{user_id}".encode(), digest_size=8).digest()
        key = int.from_bytes(digest, "big", signed=True)
        await dialect_for(self._session).lock(self._session, Lock(key))

    async def advance_sequences(self, table: Table) -> None:
        """After explicit ids were imported, move the id sequences past them (if ids have any)."""
        await dialect_for(self._session).advance_sequences(self._session, table)
