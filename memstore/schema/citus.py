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
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "COLOCATION_ANCHOR",
    "TRIGGERS",
    "CitusLayoutConflict",
    "CitusNoWorkers",
    "CitusNode",
    "CitusNotInstalled",
    "CitusPlan",
    "CitusStatus",
    "CitusTable",
    "SchemaNotDistributable",
    "apply_citus",
    "citus_plan",
    "citus_status",
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


class CitusNoWorkers(MemstoreError):
    """The coordinator has no active worker node to place shards on."""

    def __init__(self, database: str) -> None:
        self.database = database
        super().__init__(
            f"the Citus coordinator of database {database!r} has no active worker node "
            "(pg_dist_node lists no worker), so distributing would put every shard on the "
            "coordinator or fail; nothing was changed. Add the workers with "
            "SELECT citus_add_node('host', port) in this database on the coordinator, then "
            "re-run `memstore citus --apply`"
        )


class CitusLayoutConflict(MemstoreError):
    """A memstore table is already a Citus table, but not in the shape memstore plans."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            "memstore tables are already Citus tables of another kind than `memstore citus` "
            "plans: "
            + "; ".join(problems)
            + ". Nothing was changed; undo them (undistribute_table) or fix them "
            "(update_distributed_table_colocation), then re-run `memstore citus --apply`"
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


def _layout(metadata: MetaData) -> dict[str, str | None]:
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
    metadata = metadata if metadata is not None else _metadata()
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


@dataclass(frozen=True)
class CitusNode:
    """A row of ``pg_dist_node``, with the shards of memstore's distributed tables on it."""

    host: str
    port: int
    coordinator: bool
    active: bool
    should_have_shards: bool
    shards: int

    @property
    def is_worker(self) -> bool:
        return not self.coordinator and self.active


@dataclass(frozen=True)
class CitusTable:
    """One memstore table as Citus sees it, and what :func:`citus_plan` wants it to be.

    ``kind`` is ``distributed``, ``reference``, ``not distributed`` (a plain table),
    ``missing`` (no such table: not migrated) or ``other (partmethod/repmodel)`` for a
    Citus table of another kind (a Citus local or single-shard table).
    """

    name: str
    kind: str
    distribution_column: str | None
    colocation_id: int | None
    shard_count: int
    colocate_with: str | None  # planned: the anchor (itself for the anchor); None: reference

    @property
    def planned_kind(self) -> str:
        return "reference" if self.colocate_with is None else "distributed"


@dataclass(frozen=True)
class CitusStatus:
    """What :func:`citus_status` read from the coordinator's catalog."""

    database: str
    citus_version: str
    nodes: list[CitusNode]
    tables: list[CitusTable]

    @property
    def workers(self) -> list[CitusNode]:
        return [n for n in self.nodes if n.is_worker]

    def problems(self) -> dict[str, str]:
        """Table -> how it differs from the plan; empty when everything is as planned."""
        by_name = {t.name: t for t in self.tables}
        found: dict[str, str] = {}
        for table in self.tables:
            if table.kind in ("not distributed", "missing"):
                found[table.name] = table.kind
            elif table.kind != table.planned_kind:
                found[table.name] = f"is {table.kind}, planned {table.planned_kind}"
            elif table.colocate_with is not None:
                if table.distribution_column != DISTRIBUTION_COLUMN:
                    found[table.name] = (
                        f"distributed by {table.distribution_column}, planned {DISTRIBUTION_COLUMN}"
                    )
                    continue
                anchor = by_name.get(table.colocate_with)
                if anchor is None or anchor.kind != "distributed":
                    found[table.name] = f"distributed, but {table.colocate_with} is not"
                elif anchor.colocation_id != table.colocation_id:
                    found[table.name] = (
                        f"in colocation group {table.colocation_id}, not with "
                        f"{table.colocate_with} (group {anchor.colocation_id})"
                    )
        return found

    @property
    def distributed(self) -> bool:
        """Every memstore table is laid out as :func:`citus_plan` plans."""
        return not self.problems()

    def render(self) -> str:
        """The report ``memstore citus --status`` prints."""
        lines = [f"database {self.database!r}: Citus {self.citus_version}", "nodes:"]
        for node in self.nodes:
            role = "coordinator" if node.coordinator else "worker"
            state = "active" if node.active else "inactive"
            placing = "" if node.should_have_shards else ", no new shards"
            lines.append(
                f"  {role:<11} {node.host}:{node.port}  {state}{placing}, "
                f"{node.shards} shards of memstore's distributed tables"
            )
        if not self.workers:
            lines.append("  (no active worker: `memstore citus --apply` refuses to distribute)")
        width = max([len(t.name) for t in self.tables] + [5])
        lines.append("tables:")
        lines.append(f"  {'table':<{width}}  {'type':<15}  {'column':<8}  colocation  shards")
        for t in self.tables:
            lines.append(
                f"  {t.name:<{width}}  {t.kind:<15}  {t.distribution_column or '-':<8}  "
                f"{t.colocation_id if t.colocation_id is not None else '-'!s:<10}  "
                f"{t.shard_count}"
            )
        groups: dict[int, list[CitusTable]] = {}
        for t in self.tables:
            if t.colocation_id is not None:
                groups.setdefault(t.colocation_id, []).append(t)
        lines.append("colocation groups:")
        for group, members in sorted(groups.items()):
            counts = sorted({m.shard_count for m in members})
            lines.append(
                f"  {group}: {len(members)} table(s), "
                f"{'/'.join(str(c) for c in counts)} shard(s) each: "
                + ", ".join(m.name for m in members)
            )
        if not groups:
            lines.append("  (none)")
        problems = self.problems()
        if problems:
            by_reason: dict[str, list[str]] = {}
            for name, why in problems.items():
                by_reason.setdefault(why, []).append(name)
            lines.append(
                f"not as planned ({len(problems)} of {len(self.tables)} tables): "
                + "; ".join(f"{why}: {', '.join(names)}" for why, names in by_reason.items())
                + ". Run `memstore citus --apply` (after `memstore migrate`)"
            )
        else:
            tenant = sum(1 for t in self.tables if t.colocate_with is not None)
            lines.append(
                f"distributed as planned: {tenant} tenant tables by {DISTRIBUTION_COLUMN}, "
                f"co-located; {len(self.tables) - tenant} reference table(s)"
            )
        return "\n".join(lines) + "\n"


_NODES_SQL = """
SELECT n.nodename, n.nodeport, n.groupid = 0 AS coordinator, n.isactive,
       n.shouldhaveshards,
       count(pl.placementid) FILTER (WHERE p.partmethod = 'h' AND c.relname = ANY(:names))
FROM pg_dist_node n
LEFT JOIN pg_dist_placement pl ON pl.groupid = n.groupid
LEFT JOIN pg_dist_shard s ON s.shardid = pl.shardid
LEFT JOIN pg_dist_partition p ON p.logicalrelid = s.logicalrelid
LEFT JOIN pg_class c ON c.oid = p.logicalrelid AND pg_table_is_visible(c.oid)
WHERE n.noderole = 'primary'
GROUP BY n.nodeid, n.nodename, n.nodeport, n.groupid, n.isactive, n.shouldhaveshards
ORDER BY n.groupid, n.nodeid
"""

_TABLES_SQL = """
SELECT t.name, c.oid IS NOT NULL AS present, p.partmethod::text, p.repmodel::text,
       p.colocationid, column_to_column_name(p.logicalrelid, p.partkey),
       (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)
FROM unnest(CAST(:names AS text[])) AS t(name)
LEFT JOIN pg_class c ON c.relname = t.name AND c.relkind IN ('r', 'p')
     AND pg_table_is_visible(c.oid)
LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
"""


def _kind(present: bool, partmethod: str | None, repmodel: str | None) -> str:
    if not present:
        return "missing"
    if partmethod is None:
        return "not distributed"
    if partmethod == "h":
        return "distributed"
    if partmethod == "n" and repmodel == "t":
        return "reference"
    return f"other ({partmethod}/{repmodel})"


async def _read_status(conn: AsyncConnection, database: str) -> CitusStatus:
    """The catalog of the coordinator ``conn`` is connected to; CitusNotInstalled if none."""
    version = await conn.scalar(text("SELECT extversion FROM pg_extension WHERE extname = 'citus'"))
    if version is None:
        raise CitusNotInstalled(database)
    full = await conn.scalar(text("SELECT citus_version()"))
    layout = _layout(_metadata())
    names = list(layout)
    nodes = [
        CitusNode(
            host=str(r[0]),
            port=int(r[1]),
            coordinator=bool(r[2]),
            active=bool(r[3]),
            should_have_shards=bool(r[4]),
            shards=int(r[5]),
        )
        for r in await conn.execute(text(_NODES_SQL), {"names": names})
    ]
    rows = {r[0]: r for r in await conn.execute(text(_TABLES_SQL), {"names": names})}
    tables = []
    for name, colocate_with in layout.items():
        r = rows[name]
        kind = _kind(bool(r[1]), r[2], r[3])
        tables.append(
            CitusTable(
                name=name,
                kind=kind,
                distribution_column=r[5],
                colocation_id=int(r[4]) if r[4] is not None else None,
                shard_count=int(r[6] or 0),
                colocate_with=colocate_with,
            )
        )
    # "Citus 13.2.2 on x86_64-..." -> "13.2.2"
    short = str(full).split(" on ")[0].removeprefix("Citus ").strip() if full else str(version)
    return CitusStatus(database=database, citus_version=short, nodes=nodes, tables=tables)


async def citus_status(url: str | None = None) -> CitusStatus:
    """Read which memstore tables are distributed, how, and on which nodes.

    Raises :class:`CitusNotInstalled` when the database has no citus extension,
    :class:`~memstore.errors.InvalidInput` for a database that is not PostgreSQL.
    Changes nothing.
    """
    from memstore.db.engine import create_engine, resolve_url
    from memstore.db.errors import translated
    from memstore.errors import InvalidInput

    resolved = resolve_url(url)
    engine = create_engine(resolved)
    try:
        if engine.dialect.name != "postgresql":
            raise InvalidInput("Citus distributes PostgreSQL only; this URL is not PostgreSQL")
        with translated("read the Citus layout"):
            async with engine.connect() as conn:
                return await _read_status(conn, _database_name(resolved))
    finally:
        await engine.dispose()


async def apply_citus(url: str | None = None) -> list[str]:
    """Distribute what is not yet distributed, on the coordinator at ``url``, in one transaction.

    Idempotent: tables already laid out as :func:`citus_plan` plans are skipped,
    so a second run executes nothing and returns an empty list. Raises
    :class:`CitusNotInstalled` when the database does not have the citus
    extension, :class:`CitusNoWorkers` when the coordinator has no active worker,
    :class:`CitusLayoutConflict` when a memstore table is already a Citus table
    of another shape, :class:`~memstore.errors.InvalidInput` for a database that
    is not PostgreSQL; in each case nothing was changed.
    """
    from memstore.db.crosstenant import cross_tenant_connection
    from memstore.db.engine import create_engine, resolve_url
    from memstore.db.errors import translated
    from memstore.errors import InvalidInput
    from memstore.schema.migrate import check_schema

    citus_plan()  # a schema that breaks the rules is refused before connecting
    resolved = resolve_url(url)
    engine = create_engine(resolved, command_timeout=None)
    try:
        if engine.dialect.name != "postgresql":
            raise InvalidInput("Citus distributes PostgreSQL only; this URL is not PostgreSQL")
        await check_schema(engine)
        with translated("distribute on citus"):
            async with engine.begin() as conn:
                status = await _read_status(conn, _database_name(resolved))
                if not status.workers:
                    raise CitusNoWorkers(status.database)
                problems = status.problems()
                conflicts = [
                    f"{name} {why}"
                    for name, why in problems.items()
                    if why not in ("not distributed", "missing")
                ]
                if conflicts:
                    raise CitusLayoutConflict(conflicts)
                done = [t.name for t in status.tables if t.name not in problems]
                statements = citus_plan(done=done).statements
                if not any("create_" in s for s in statements):
                    return []
                await conn.run_sync(cross_tenant_connection, "citus-distribution")
                for statement in statements:
                    await conn.execute(text(statement))
    finally:
        await engine.dispose()
    return statements
