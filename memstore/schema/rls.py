"""Row-level security keyed on a per-transaction tenant setting (PostgreSQL's).

``enable_rls`` puts one policy on every tenant table: a row is visible and
writable only when its ``user_id`` equals the setting :data:`RLS_SETTING`; the
statements and the catalog are the backend's (its ``Dialect.rls_statements`` and
``Dialect.rls_state``).
``MemoryStore.open(url, rls=True)`` sets that setting at the start of every transaction
(transaction-local, so pooled connections never carry it over). A connection
that sets nothing sees no rows at all.

Table owners and roles with BYPASSRLS are exempt unless ``force=True``, so run
the application as a separate non-owner role (see docs/guarantees.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memstore.db.connections import TENANT_SETTING
from memstore.db.crosstenant import cross_tenant_connection
from memstore.db.engine import create_engine
from memstore.db.errors import translated
from memstore.dialects import Dialect, dialect_for
from memstore.errors import InvalidInput
from memstore.repositories.tenants import tenant_tables

__all__ = [
    "RLS_SETTING",
    "TableSecurity",
    "disable_rls",
    "enable_rls",
    "rls_status",
]

RLS_SETTING = TENANT_SETTING
T = TypeVar("T")


@dataclass(frozen=True)
class TableSecurity:
    table: str
    enabled: bool
    forced: bool
    has_policy: bool


async def _on(
    target: AsyncEngine | str | None,
    action: str,
    body: Callable[[AsyncConnection, Dialect], Awaitable[T]],
) -> T:
    engine = target if isinstance(target, AsyncEngine) else create_engine(target)
    try:
        dialect = dialect_for(engine)
        if not dialect.row_level_security:
            raise InvalidInput("row-level security needs PostgreSQL")
        with translated(f"rls {action}"):
            async with engine.begin() as conn:
                await conn.run_sync(cross_tenant_connection, "rls-management")
                return await body(conn, dialect)
    finally:
        if not isinstance(target, AsyncEngine):
            await engine.dispose()


def _quoted(conn: AsyncConnection, name: str) -> str:
    return conn.dialect.identifier_preparer.quote(name)


async def _alter_each(target: AsyncEngine | str | None, action: str, **how: bool) -> list[str]:
    """Run the backend's statements of ``action`` on every tenant table; returns the tables."""

    async def body(conn: AsyncConnection, dialect: Dialect) -> list[str]:
        names = []
        for table in tenant_tables():
            quoted = _quoted(conn, table.name)
            for statement in dialect.rls_statements(quoted, setting=RLS_SETTING, **how):
                await conn.execute(text(statement))
            names.append(table.name)
        return names

    return await _on(target, action, body)


async def enable_rls(target: AsyncEngine | str | None = None, *, force: bool = False) -> list[str]:
    """Enable the tenant policy on every tenant table (idempotent); returns the tables.

    Re-run after ``memstore migrate`` so tables added by later revisions are covered
    (:func:`rls_status` lists any that are not).
    """
    return await _alter_each(target, "enable", enable=True, force=force)


async def disable_rls(target: AsyncEngine | str | None = None) -> list[str]:
    """Drop the tenant policy and disable row-level security on every tenant table."""
    return await _alter_each(target, "disable", enable=False, force=False)


async def rls_status(target: AsyncEngine | str | None = None) -> list[TableSecurity]:
    """Row-level security state of every tenant table, as the catalog reports it."""

    async def body(conn: AsyncConnection, dialect: Dialect) -> list[TableSecurity]:
        out = []
        for table in tenant_tables():
            state = await dialect.rls_state(conn, _quoted(conn, table.name))
            enabled, forced, has_policy = state
            out.append(TableSecurity(table.name, enabled, forced, has_policy))
        return out

    return await _on(target, "status", body)
