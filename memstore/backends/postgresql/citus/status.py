"""Reading a Citus cluster's catalog: which memstore tables are distributed, how, where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import make_url

from memstore.backends.postgresql.citus.errors import CitusNotInstalled
from memstore.backends.postgresql.citus.plan import memstore_metadata, planned_layout
from memstore.db.distribution import DISTRIBUTION_COLUMN
from memstore.dialects import dialect_for

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "CitusNode",
    "CitusStatus",
    "CitusTable",
    "citus_status",
    "database_name",
    "read_status",
]


def database_name(url: str) -> str:
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


async def read_status(conn: AsyncConnection, database: str) -> CitusStatus:
    """The catalog of the coordinator ``conn`` is connected to; CitusNotInstalled if none."""
    version = await conn.scalar(text("SELECT extversion FROM pg_extension WHERE extname = 'citus'"))
    if version is None:
        raise CitusNotInstalled(database)
    full = await conn.scalar(text("SELECT citus_version()"))
    layout = planned_layout(memstore_metadata())
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
        if not dialect_for(engine).distributable:
            raise InvalidInput("Citus distributes PostgreSQL only; this URL is not PostgreSQL")
        with translated("read the Citus layout"):
            async with engine.connect() as conn:
                return await read_status(conn, database_name(resolved))
    finally:
        await engine.dispose()
