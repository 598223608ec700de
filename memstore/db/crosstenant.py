"""The named operations allowed to run SQL across tenants, and how statements are marked.

Every statement memstore runs on a tenant table filters on that table's
``user_id`` (equality, ``IN`` or ``ANY``): that is tenant isolation, and on a
Citus cluster it is what routes the statement to a single shard. The few
operations that must read or change several tenants at once mark their
statements with an execution option naming one entry of
:data:`CROSS_TENANT_OPERATIONS`; the test suite's statement audit
(``tests/tenant_audit.py``) fails on any unfiltered statement that does not
carry such a mark. To add one: register the name with its reason here, then
wrap the statement with :func:`cross_tenant` (or the connection with
:func:`cross_tenant_connection` for whole maintenance jobs such as DDL).
"""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.sql.base import Executable

__all__ = [
    "CROSS_TENANT_OPERATIONS",
    "CROSS_TENANT_OPTION",
    "cross_tenant",
    "cross_tenant_connection",
    "cross_tenant_operation",
]

# Execution option key read by the statement audit; its value names the operation.
CROSS_TENANT_OPTION = "memstore_cross_tenant"

# name -> why it must span tenants (and what it costs on a distributed cluster).
CROSS_TENANT_OPERATIONS: dict[str, str] = {
    "consolidation-scheduling": (
        "the consolidator finds which tenants have unconsolidated episodes and counts "
        "them; the batches themselves then run per tenant (multi-shard read, one per run)"
    ),
    "gc-all-tenants": (
        "`memstore gc` without --user-id lists the tenants that have threads, expired "
        "working-memory keys or change-log rows past retention to collect; deletion "
        "then runs per tenant"
    ),
    "rls-management": (
        "`memstore rls enable|disable|status` changes or reads the policy of every "
        "tenant table (DDL and catalog reads, no tenant rows)"
    ),
    "migration": (
        "Alembic revisions create and alter tables and may backfill columns of every "
        "row (schema changes are by nature for all tenants)"
    ),
    "reembed": (
        "`memstore reembed` recomputes embeddings of every row and may change the "
        "vector column type and its index: a maintenance job over all tenants"
    ),
    "recall-hnsw-overfetch": (
        "on pgvector < 0.8 a large tenant's dense recall reads the globally nearest "
        "rows through the shared HNSW index and filters them by tenant afterwards "
        "(the tenant filter sits outside the LIMIT); multi-shard on Citus"
    ),
    "citus-distribution": (
        "`memstore citus --apply` turns every tenant table into a distributed table "
        "(DDL-like calls naming tenant tables)"
    ),
    "inspector-tenant-list": (
        "`memstore inspect` lists the ids of every tenant for its picker (distinct "
        "user_id per table, ids only, never row contents); one multi-shard read per page"
    ),
    "multi-tenant-batch": (
        "`remember_many` with turns of several tenants reserves all their session-turn "
        "counters in one upsert (each row filtered by its own tenant); on Citus a "
        "multi-shard write planned through the coordinator. A one-tenant batch is routed "
        "to its shard"
    ),
    "sequence-advance": (
        "after an import with explicit ids, a Postgres sequence (global to all tenants) "
        "is moved past the highest id of the table"
    ),
}

_S = TypeVar("_S", bound=Executable)


def cross_tenant_operation(name: str) -> str:
    """``name`` if it is a registered cross-tenant operation; ValueError otherwise."""
    if name not in CROSS_TENANT_OPERATIONS:
        raise ValueError(
            f"{name!r} is not a registered cross-tenant operation; add it with its reason "
            "to memstore.db.crosstenant.CROSS_TENANT_OPERATIONS"
        )
    return name


def cross_tenant(statement: _S, name: str) -> _S:
    """``statement`` marked as part of the registered cross-tenant operation ``name``."""
    return statement.execution_options(**{CROSS_TENANT_OPTION: cross_tenant_operation(name)})


def cross_tenant_connection(connection: Connection, name: str) -> Connection:
    """Mark every later statement on this (sync) connection; returns the same connection.

    For maintenance jobs whose every statement spans tenants (migrations, RLS
    management, re-embedding). The mark lives on this Connection object only,
    never on the pooled DBAPI connection, so it ends when the connection is closed.
    """
    return connection.execution_options(**{CROSS_TENANT_OPTION: cross_tenant_operation(name)})
