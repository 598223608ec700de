"""Distributing the schema on a Citus cluster: the statements, and what changes.

Generated from the models' metadata (:mod:`memstore.db.distribution`): every
tenant table is hash-distributed by ``user_id`` and co-located with
``episodes``, so one tenant's rows of every table share a shard group; global
tables become reference tables. :func:`citus_plan` only builds text;
:func:`apply_citus` runs it in one transaction on a database that has the
``citus`` extension, and changes nothing otherwise.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from sqlalchemy import MetaData, text
from sqlalchemy.engine import make_url

from memstore.db.crosstenant import CROSS_TENANT_OPERATIONS
from memstore.db.distribution import (
    DISTRIBUTION_COLUMN,
    global_tables,
    metadata_problems,
    tenant_tables_in_order,
)
from memstore.errors import MemstoreError

__all__ = [
    "COLOCATION_ANCHOR",
    "TRIGGERS",
    "CitusNotInstalled",
    "CitusPlan",
    "SchemaNotDistributable",
    "apply_citus",
    "citus_plan",
]

# The biggest, most-queried table; every other tenant table joins its group.
COLOCATION_ANCHOR = "episodes"
# Triggers that migrations create on tenant tables (the ORM does not know them).
TRIGGERS: dict[str, str] = {
    "slots": "slots_reject_update (revision 0002): BEFORE UPDATE, raises; slots are append-only",
}


class CitusNotInstalled(MemstoreError):
    """``memstore citus --apply`` needs a database with the ``citus`` extension."""

    def __init__(self, database: str) -> None:
        self.database = database
        super().__init__(
            f"the citus extension is not installed in database {database!r}, so it is not "
            "a Citus coordinator; nothing was changed. Install Citus on every node, run "
            "CREATE EXTENSION citus on the coordinator, add the workers "
            "(citus_add_node), then re-run `memstore citus --apply`, or run the statements "
            "`memstore citus` prints yourself"
        )


class SchemaNotDistributable(MemstoreError):
    """A model breaks a distribution rule (a key without ``user_id``, an undeclared table)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            "the schema cannot be distributed by user_id: "
            + "; ".join(problems)
            + ". Fix the models (see memstore/db/distribution.py)"
        )


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


def _metadata() -> MetaData:
    import memstore.models  # noqa: F401  (registers every table)
    from memstore.db.base import Base

    return Base.metadata


def citus_plan(metadata: MetaData | None = None) -> CitusPlan:
    """The statements that distribute ``metadata`` (default: memstore's models)."""
    metadata = metadata if metadata is not None else _metadata()
    problems = metadata_problems(metadata)
    if problems:
        raise SchemaNotDistributable(problems)
    tenants = tenant_tables_in_order(metadata)
    names = [t.name for t in tenants]
    anchor = COLOCATION_ANCHOR if COLOCATION_ANCHOR in names else (names[0] if names else "")
    statements: list[str] = []
    if any(name in TRIGGERS for name in names):
        # Citus refuses to distribute a table with triggers unless told they are safe;
        # ours only raise and touch no other table, so they are safe on every shard.
        statements.append("SET LOCAL citus.enable_unsafe_triggers TO on")
    # Reference tables first: distributed tables may reference them, never the reverse.
    for table in global_tables(metadata):
        statements.append(f"SELECT create_reference_table({_literal(table.name)})")
    # The anchor first (it references no tenant table), then parents before children.
    ordered = sorted(tenants, key=lambda t: t.name != anchor)
    for table in ordered:
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
        "Row-level security: `memstore rls enable` after distributing puts the policies on "
        "every shard, but rls=True does not work on Citus yet: it sets memstore.user_id "
        "with set_config(..., true) on the coordinator, which Citus does not send to the "
        "workers (only SET LOCAL, with citus.propagate_set_commands = 'local'), so the "
        "shards' policies see no tenant and a non-owner role reads nothing. Isolate tenants "
        "with the library's user_id filters (and a role per service) instead.",
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


def _database_name(url: str) -> str:
    return make_url(url).database or "?"


async def apply_citus(url: str | None = None) -> list[str]:
    """Run :func:`citus_plan` on the coordinator at ``url`` in one transaction.

    Raises :class:`CitusNotInstalled` (nothing changed) when the database does
    not have the citus extension, :class:`~memstore.errors.InvalidInput` for a
    database that is not PostgreSQL.
    """
    from memstore.db.crosstenant import cross_tenant_connection
    from memstore.db.engine import create_engine, resolve_url
    from memstore.db.errors import translated
    from memstore.errors import InvalidInput
    from memstore.migrate import check_schema

    plan = citus_plan()
    resolved = resolve_url(url)
    engine = create_engine(resolved, command_timeout=None)
    try:
        if engine.dialect.name != "postgresql":
            raise InvalidInput("Citus distributes PostgreSQL only; this URL is not PostgreSQL")
        await check_schema(engine)
        with translated("distribute on citus"):
            async with engine.begin() as conn:
                installed = await conn.scalar(
                    text("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
                )
                if installed is None:
                    raise CitusNotInstalled(_database_name(resolved))
                await conn.run_sync(cross_tenant_connection, "citus-distribution")
                for statement in plan.statements:
                    await conn.execute(text(statement))
    finally:
        await engine.dispose()
    return plan.statements
