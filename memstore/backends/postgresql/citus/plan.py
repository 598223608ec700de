"""The Citus plan: which statements distribute memstore's schema, and what changes.

Generated from the models' metadata (:mod:`memstore.db.distribution`): every
tenant table is hash-distributed by ``user_id`` and co-located with
``episodes``, so one tenant's rows of every table share a shard group; global
tables become reference tables. Only builds text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection
from dataclasses import dataclass, field

from sqlalchemy import MetaData

from memstore.backends.postgresql.citus.errors import SchemaNotDistributable
from memstore.db.crosstenant import CROSS_TENANT_OPERATIONS
from memstore.db.distribution import (
    DISTRIBUTION_COLUMN,
    global_tables,
    metadata_problems,
    tenant_tables_in_order,
)

__all__ = [
    "COLOCATION_ANCHOR",
    "TRIGGERS",
    "CitusPlan",
    "citus_plan",
    "memstore_metadata",
    "planned_layout",
]

# The biggest, most-queried table; every other tenant table joins its group.
COLOCATION_ANCHOR = "episodes"
# Triggers that migrations create on tenant tables (the ORM does not know them).
TRIGGERS: dict[str, str] = {
    "slots": "slots_reject_update (revision 0002): BEFORE UPDATE, raises; slots are append-only",
}


@dataclass(frozen=True)
class CitusPlan:
    """Statements in the order they must run, and notes for the operator."""

    statements: list[str]
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        """A psql-ready script: notes as comments, statements in one transaction."""
        lines = [
            "-- memstore: distribute the schema on a Citus cluster (run on the coordinator,",
            "-- after `memstore migrate`; citus and vector installed on every node).",
            "BEGIN;",
        ]
        lines += [f"{s};" for s in self.statements]
        lines.append("COMMIT;")
        lines.append("")
        lines.append("-- What changes on a distributed cluster:")
        for note in self.notes:
            lines += textwrap.wrap(note, 96, initial_indent="-- * ", subsequent_indent="--   ")
        return "\n".join(lines) + "\n"


def _literal(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def memstore_metadata() -> MetaData:
    import memstore.models  # noqa: F401  (registers every table)
    from memstore.db.base import Base

    return Base.metadata


def planned_layout(metadata: MetaData) -> dict[str, str | None]:
    """Table -> the table it is co-located with (itself for the anchor); None: reference."""
    tenants = [t.name for t in tenant_tables_in_order(metadata)]
    anchor = COLOCATION_ANCHOR if COLOCATION_ANCHOR in tenants else (tenants[0] if tenants else "")
    layout: dict[str, str | None] = {t.name: None for t in global_tables(metadata)}
    layout.update({name: anchor for name in tenants})
    return layout


def citus_plan(metadata: MetaData | None = None, *, done: Collection[str] = ()) -> CitusPlan:
    """The statements that distribute ``metadata`` (default: memstore's models).

    Tables named in ``done`` are already laid out as planned and get no statement.
    """
    metadata = metadata if metadata is not None else memstore_metadata()
    problems = metadata_problems(metadata)
    if problems:
        raise SchemaNotDistributable(problems)
    tenants = tenant_tables_in_order(metadata)
    names = [t.name for t in tenants]
    anchor = COLOCATION_ANCHOR if COLOCATION_ANCHOR in names else (names[0] if names else "")
    statements: list[str] = []
    if any(name in TRIGGERS and name not in done for name in names):
        # Citus refuses to distribute a table with triggers unless told they are safe;
        # ours only raise and touch no other table, so they are safe on every shard.
        statements.append("SET LOCAL citus.enable_unsafe_triggers TO on")
    # Reference tables first: distributed tables may reference them, never the reverse.
    for table in global_tables(metadata):
        if table.name not in done:
            statements.append(f"SELECT create_reference_table({_literal(table.name)})")
    # The anchor first (it references no tenant table), then parents before children.
    ordered = sorted(tenants, key=lambda t: t.name != anchor)
    for table in ordered:
        if table.name in done:
            continue
        args = [_literal(table.name), _literal(DISTRIBUTION_COLUMN)]
        if table.name != anchor:
            args.append(f"colocate_with => {_literal(anchor)}")
        statements.append(f"SELECT create_distributed_table({', '.join(args)})")
    return CitusPlan(statements=statements, notes=_notes(anchor, names))


def _notes(anchor: str, tenant_names: list[str]) -> list[str]:
    cross = "; ".join(f"{name} ({why})" for name, why in CROSS_TENANT_OPERATIONS.items())
    triggers = "; ".join(f"{t}: {what}" for t, what in TRIGGERS.items() if t in tenant_names)
    return [
        f"Tenant tables ({', '.join(tenant_names)}) are hash-distributed by "
        f"{DISTRIBUTION_COLUMN} and co-located with {anchor}: one tenant's rows of every "
        "table share a shard group, so the composite foreign keys and joins stay on one "
        "node. Every library statement filters on user_id (proved by the test suite's "
        "statement audit), so each is routed to a single shard.",
        "Global tables are reference tables: copied to every node, written through the "
        "coordinator (memstore_config is written rarely: migrations, reembed, and the "
        "embedder identity recorded once at the first vector write).",
        "HNSW (ix_episodes_embedding_hnsw) and GIN full-text indexes are created per shard: "
        "each shard's graph covers only its tenants, so a tenant's dense and keyword recall "
        "searches one shard's smaller index. Use pgvector >= 0.8 on every node: the older "
        "over-fetch plan reads the global nearest rows and is multi-shard. `memstore "
        "reembed` to a new width rebuilds the index on every shard.",
        "Advisory locks are per node: consolidation's per-tenant "
        "pg_try_advisory_xact_lock, the fact writers' pg_advisory_xact_lock and "
        "forget's erasure lock are taken on the node the client is connected to. Connect "
        "every consolidator, writer and forget through the coordinator; with "
        "query-from-any-node, clients on different nodes do not exclude each other (the "
        "leases in episode_consolidation still stop double consolidation, but a claim may "
        "then race another node's write of the same tenant, and forget no longer waits "
        "for in-flight derived writes).",
        f"Triggers: {triggers or 'none'}. Citus distributes them only with "
        "citus.enable_unsafe_triggers (set above for this transaction); they run per shard.",
        "Row-level security: `memstore rls enable`, before or after distributing, puts the "
        "policies on every shard (Citus copies a table's policies to its shards and "
        "propagates later changes). On Citus, rls=True names the tenant with SET LOCAL "
        "memstore.user_id after SET LOCAL citus.propagate_set_commands = 'local', so the "
        "workers that run each routed statement see it (set_config() would stay on the "
        "coordinator and the shards would show nothing); application SQL that names a "
        "tenant itself must do the same.",
        f"Cross-tenant operations are multi-shard (fan out to every shard): {cross}.",
        "Later `memstore migrate` runs go to the coordinator, which propagates DDL "
        "(ADD COLUMN, generated columns, CREATE INDEX) to the shards; revision 0010's SET "
        "STORAGE, which Citus does not propagate, sets every shard itself. Tested: "
        "distributed at 0007, upgraded to head. A revision that backfills every row is a "
        "multi-shard statement.",
        "create_distributed_table copies existing rows while blocking writes to that "
        "table; for large tables run create_distributed_table_concurrently (Citus >= 11.2, "
        "outside a transaction block) table by table in the same order.",
    ]
