"""PostgreSQL row-level security keyed on a per-transaction tenant setting.

``enable_rls`` puts one policy on every tenant table: a row is visible and
writable only when its ``user_id`` equals ``current_setting('memstore.user_id')``.
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
from memstore.dialects import dialect_for
from memstore.errors import InvalidInput
from memstore.repositories.tenants import tenant_tables

__all__ = [
    "POLICY_NAME",
    "RLS_SETTING",
    "TableSecurity",
    "disable_rls",
    "enable_rls",
    "rls_status",
]

RLS_SETTING = TENANT_SETTING
POLICY_NAME = "memstore_tenant_isolation"
T = TypeVar("T")
_CURRENT_TENANT = f"current_setting('{RLS_SETTING}', true)"


@dataclass(frozen=True)
class TableSecurity:
    table: str
    enabled: bool
    forced: bool
    has_policy: bool


async def _on(
    target: AsyncEngine | str | None,
    action: str,
    body: Callable[[AsyncConnection], Awaitable[T]],
) -> T:
    engine = target if isinstance(target, AsyncEngine) else create_engine(target)
    try:
        if not dialect_for(engine).row_level_security:
            raise InvalidInput("row-level security needs PostgreSQL")
        with translated(f"rls {action}"):
            async with engine.begin() as conn:
                await conn.run_sync(cross_tenant_connection, "rls-management")
                return await body(conn)
    finally:
        if not isinstance(target, AsyncEngine):
            await engine.dispose()


def _quoted(conn: AsyncConnection, name: str) -> str:
    return conn.dialect.identifier_preparer.quote(name)


async def _alter_each(
    target: AsyncEngine | str | None, action: str, statements: Callable[[str], list[str]]
) -> list[str]:
    """Run ``statements(quoted table name)`` on every tenant table; returns the tables."""

    async def body(conn: AsyncConnection) -> list[str]:
        names = []
        for table in tenant_tables():
            for statement in statements(_quoted(conn, table.name)):
                await conn.execute(text(statement))
            names.append(table.name)
        return names

    return await _on(target, action, body)


async def enable_rls(target: AsyncEngine | str | None = None, *, force: bool = False) -> list[str]:
    """Enable the tenant policy on every tenant table (idempotent); returns the tables.

    Re-run after ``memstore migrate`` so tables added by later revisions are covered
    (:func:`rls_status` lists any that are not).
    """
    return await _alter_each(
        target,
        "enable",
        lambda name: [
            f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {name} {'FORCE' if force else 'NO FORCE'} ROW LEVEL SECURITY",
            f"DROP POLICY IF EXISTS {POLICY_NAME} ON {name}",
            f"CREATE POLICY {POLICY_NAME} ON {name} "
            f"USING (user_id = {_CURRENT_TENANT}) "
            f"WITH CHECK (user_id = {_CURRENT_TENANT})",
        ],
    )


async def disable_rls(target: AsyncEngine | str | None = None) -> list[str]:
    """Drop the tenant policy and disable row-level security on every tenant table."""
    return await _alter_each(
        target,
        "disable",
        lambda name: [
            f"DROP POLICY IF EXISTS {POLICY_NAME} ON {name}",
            f"ALTER TABLE {name} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {name} DISABLE ROW LEVEL SECURITY",
        ],
    )


async def rls_status(target: AsyncEngine | str | None = None) -> list[TableSecurity]:
    """Row-level security state of every tenant table, as the catalog reports it."""

    async def body(conn: AsyncConnection) -> list[TableSecurity]:
        out = []
        for table in tenant_tables():
            row = (
                await conn.execute(
                    text(
                        "SELECT c.relrowsecurity, c.relforcerowsecurity, EXISTS ("
                        "  SELECT 1 FROM pg_policy p"
                        "  WHERE p.polrelid = c.oid AND p.polname = :policy)"
                        " FROM pg_class c WHERE c.oid = to_regclass(:name)"
                    ),
                    {"policy": POLICY_NAME, "name": _quoted(conn, table.name)},
                )
            ).first()
            enabled, forced, has_policy = row if row is not None else (False, False, False)
            out.append(TableSecurity(table.name, bool(enabled), bool(forced), bool(has_policy)))
        return out

    return await _on(target, "status", body)
