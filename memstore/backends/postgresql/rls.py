"""Postgres's row-level security: one policy per tenant table, and how the catalog shows it.

Table owners and roles with BYPASSRLS are exempt unless the policy is forced, so
run the application as a separate non-owner role (see docs/guarantees.md).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["POLICY_NAME", "rls_state", "rls_statements"]

POLICY_NAME = "memstore_tenant_isolation"


def rls_statements(table: str, *, setting: str, enable: bool, force: bool) -> list[str]:
    """The statements that put the tenant policy on ``table`` (quoted), or take it off."""
    if not enable:
        return [
            f"DROP POLICY IF EXISTS {POLICY_NAME} ON {table}",
            f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
        ]
    tenant = f"current_setting('{setting}', true)"
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} {'FORCE' if force else 'NO FORCE'} ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {POLICY_NAME} ON {table}",
        f"CREATE POLICY {POLICY_NAME} ON {table} "
        f"USING (user_id = {tenant}) "
        f"WITH CHECK (user_id = {tenant})",
    ]


async def rls_state(conn: AsyncConnection, table: str) -> tuple[bool, bool, bool]:
    """Whether ``table`` (quoted) has row-level security on, forced, and the policy."""
    row = (
        await conn.execute(
            text(
                "SELECT c.relrowsecurity, c.relforcerowsecurity, EXISTS ("
                "  SELECT 1 FROM pg_policy p"
                "  WHERE p.polrelid = c.oid AND p.polname = :policy)"
                " FROM pg_class c WHERE c.oid = to_regclass(:name)"
            ),
            {"policy": POLICY_NAME, "name": table},
        )
    ).first()
    if row is None:
        return False, False, False
    enabled, forced, has_policy = row
    return bool(enabled), bool(forced), bool(has_policy)
