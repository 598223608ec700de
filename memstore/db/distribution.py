"""Which tables are distributed by tenant, which are global, and the rules that make it work.

A *tenant table* has a ``user_id`` column; it can be hash-distributed by
``user_id`` (Citus) only if every primary key, unique constraint, unique index
and foreign key includes ``user_id`` (a foreign key must map ``user_id`` to the
referenced table's ``user_id``, so both rows live on the same shard), and
``user_id`` is NOT NULL. Every other table must be declared global
(``info={"global": True}``): it becomes a reference table copied to every node,
so it must not reference a tenant table.

The rules are checked on the models' metadata (:func:`metadata_problems`) and on
a live database's catalog (:func:`catalog_problems`), where the objects only
migrations manage are accounted for by name in :data:`MIGRATION_ONLY_TABLES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import (
    ForeignKeyConstraint,
    Index,
    MetaData,
    Table,
    UniqueConstraint,
    inspect,
    text,
)
from sqlalchemy.engine import Connection

from memstore.dialects import dialect_for

__all__ = [
    "DISTRIBUTION_COLUMN",
    "MIGRATION_ONLY_TABLES",
    "catalog_problems",
    "global_tables",
    "is_distributed",
    "is_global",
    "metadata_problems",
    "set_column_storage",
    "set_shard_column_storage",
    "shards_follow_column_storage",
    "tenant_tables_in_order",
]

DISTRIBUTION_COLUMN = "user_id"

# Tables a live database holds that are not models, each with why it is exempt.
# SQLite-only structures never reach a distributed (Postgres) cluster.
MIGRATION_ONLY_TABLES: dict[str, str] = {
    r"alembic_version": "Alembic's revision bookkeeping: one row for the whole database",
    r"(episodes|facts)_fts(_(data|idx|content|docsize|config))?": (
        "SQLite only: the FTS5 full-text index and its shadow tables (revision 0003); "
        "rows are addressed through the *_fts_keys table, which holds user_id"
    ),
    r"(episodes|facts)_fts_keys": (
        "SQLite only: maps FTS5 integer rowids to (user_id, id); its rowid key is "
        "SQLite's own row address, the (user_id, id) unique key is the tenant key"
    ),
    r"(episodes|facts)_fts_instances": (
        "SQLite only: a read-only fts5vocab view of the FTS5 index's term occurrences "
        "(revisions 0008 and 0013); it stores nothing of its own"
    ),
    r"search_versions": (
        "SQLite only: each tenant's search version for the in-process vector cache "
        "(revision 0008), keyed by (user_id, tbl)"
    ),
}


def is_global(table: Table) -> bool:
    return bool(table.info.get("global"))


def global_tables(metadata: MetaData) -> list[Table]:
    return [t for t in metadata.sorted_tables if DISTRIBUTION_COLUMN not in t.c]


def tenant_tables_in_order(metadata: MetaData) -> list[Table]:
    """Tenant tables, every table after the tables it references (parents first)."""
    return [t for t in metadata.sorted_tables if DISTRIBUTION_COLUMN in t.c]


def _covers(columns: Iterable[str]) -> bool:
    return DISTRIBUTION_COLUMN in set(columns)


def metadata_problems(metadata: MetaData) -> list[str]:
    """Every breach of the distribution rules in the models; empty when distributable."""
    problems: list[str] = []
    tenant_names = {t.name for t in tenant_tables_in_order(metadata)}
    for table in metadata.sorted_tables:
        name = table.name
        if DISTRIBUTION_COLUMN not in table.c:
            if not is_global(table):
                problems.append(
                    f"{name}: has no {DISTRIBUTION_COLUMN} column and is not declared "
                    "global (info={'global': True})"
                )
            for fk in table.foreign_key_constraints:
                if fk.referred_table.name in tenant_names:
                    problems.append(
                        f"{name}: global table references tenant table "
                        f"{fk.referred_table.name} (a reference table cannot)"
                    )
            continue
        if is_global(table):
            problems.append(f"{name}: declared global but has a {DISTRIBUTION_COLUMN} column")
        if table.c[DISTRIBUTION_COLUMN].nullable:
            problems.append(f"{name}: {DISTRIBUTION_COLUMN} is nullable")
        if not _covers(c.name for c in table.primary_key.columns):
            problems.append(f"{name}: primary key lacks {DISTRIBUTION_COLUMN}")
        for constraint in table.constraints:
            if isinstance(constraint, UniqueConstraint) and not _covers(
                c.name for c in constraint.columns
            ):
                problems.append(
                    f"{name}: unique constraint {constraint.name} lacks {DISTRIBUTION_COLUMN}"
                )
            if isinstance(constraint, ForeignKeyConstraint):
                problems.extend(_fk_problem(name, constraint, tenant_names))
        for index in table.indexes:
            if (
                isinstance(index, Index)
                and index.unique
                and not _covers(getattr(e, "name", "") for e in index.expressions)
            ):
                problems.append(f"{name}: unique index {index.name} lacks {DISTRIBUTION_COLUMN}")
    return problems


def _fk_problem(name: str, fk: ForeignKeyConstraint, tenant_names: set[str]) -> list[str]:
    referred = fk.referred_table.name
    if referred not in tenant_names:
        return []  # to a reference table: allowed from any table
    pairs = {e.parent.name: e.column.name for e in fk.elements}
    if pairs.get(DISTRIBUTION_COLUMN) != DISTRIBUTION_COLUMN:
        return [
            f"{name}: foreign key {fk.name} to {referred} does not map "
            f"{DISTRIBUTION_COLUMN} to {referred}.{DISTRIBUTION_COLUMN}"
        ]
    return []


def _exempt(name: str) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in MIGRATION_ONLY_TABLES)


_STORAGE_NAMES = {"p": "PLAIN", "e": "EXTERNAL", "m": "MAIN", "x": "EXTENDED"}


def shards_follow_column_storage(connection: Connection, table: str, column: str) -> list[str]:
    """Citus: give every shard of distributed ``table`` the coordinator's storage of
    ``column`` where it differs (run after a migration committed); failures' messages.

    In a migration run that also altered ``table`` in an earlier revision, the
    shard commands of :func:`set_shard_column_storage` reported success yet the
    shards kept their storage (seen with revisions 0009 and 0010 in one run on Citus
    13.2); once that run committed, nothing holds the shards and this settles them.
    """
    if not is_distributed(connection, table):
        return []
    letter = connection.execute(
        text(
            "SELECT CAST(attstorage AS text) FROM pg_attribute "
            "WHERE attrelid = CAST(:t AS regclass) AND attname = :c"
        ),
        {"t": table, "c": column},
    ).scalar_one()
    shard_letters = connection.execute(
        text("SELECT DISTINCT result FROM run_command_on_shards(CAST(:t AS regclass), :command)"),
        {
            "t": table,
            "command": "SELECT attstorage FROM pg_attribute "
            f"WHERE attrelid = '%s'::regclass AND attname = '{column}'",
        },
    ).scalars()
    if set(shard_letters) == {letter}:
        return []
    return set_shard_column_storage(connection, table, column, _STORAGE_NAMES[letter])


def _citus_shard_relations(connection: Connection) -> set[str]:
    """Citus: the names of the shards (``<table>_<shardid>``) this node's catalog shows.

    A coordinator holds the shard of every reference table; shards are Citus's
    storage of a table the rules already judge, not tables of their own.
    """
    citus = text("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
    if not dialect_for(connection).distributable or connection.execute(citus).first() is None:
        return set()
    rows = connection.execute(text("SELECT logicalrelid, shardid FROM pg_dist_shard")).all()
    names = set()
    for relation, shardid in rows:
        names.add(f"{str(relation).split('.')[-1].strip(chr(34))}_{shardid}")
    return names


def catalog_problems(connection: Connection, metadata: MetaData) -> list[str]:
    """The same rules, read from a live database's catalog (run inside ``run_sync``).

    Also fails on a table that is neither a model nor a named migration-only table,
    so a table created by a migration alone cannot escape the rules.
    """
    inspector = inspect(connection)
    problems: list[str] = []
    models = {t.name: t for t in metadata.sorted_tables}
    shards = _citus_shard_relations(connection)
    for name in sorted(inspector.get_table_names()):
        if _exempt(name) or name in shards:
            continue
        if name not in models:
            problems.append(f"{name}: table in the database but not among the models")
            continue
        columns = {c["name"]: c for c in inspector.get_columns(name)}
        if DISTRIBUTION_COLUMN not in columns:
            if not is_global(models[name]):
                problems.append(f"{name}: no {DISTRIBUTION_COLUMN} and not declared global")
            continue
        if columns[DISTRIBUTION_COLUMN].get("nullable", True):
            problems.append(f"{name}: {DISTRIBUTION_COLUMN} is nullable")
        pk = inspector.get_pk_constraint(name).get("constrained_columns") or []
        if not _covers(pk):
            problems.append(f"{name}: primary key {pk} lacks {DISTRIBUTION_COLUMN}")
        for unique in inspector.get_unique_constraints(name):
            if not _covers(unique["column_names"]):
                problems.append(
                    f"{name}: unique constraint {unique.get('name')} lacks {DISTRIBUTION_COLUMN}"
                )
        for index in inspector.get_indexes(name):
            cols = [c for c in index.get("column_names") or [] if c]
            if index.get("unique") and not _covers(cols):
                problems.append(
                    f"{name}: unique index {index.get('name')} lacks {DISTRIBUTION_COLUMN}"
                )
        for fk in inspector.get_foreign_keys(name):
            referred = fk["referred_table"]
            ref_model = models.get(referred)
            if ref_model is not None and DISTRIBUTION_COLUMN not in ref_model.c:
                continue
            pairs = dict(zip(fk["constrained_columns"], fk["referred_columns"], strict=True))
            if pairs.get(DISTRIBUTION_COLUMN) != DISTRIBUTION_COLUMN:
                problems.append(
                    f"{name}: foreign key {fk.get('name')} to {referred} does not "
                    f"map {DISTRIBUTION_COLUMN}"
                )
    return problems


def is_distributed(connection: Connection, table: str) -> bool:
    """Whether ``table`` exists and is a Citus distributed table (``memstore citus --apply``)."""
    if not dialect_for(connection).distributable:
        return False
    citus = text("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
    if connection.execute(citus).first() is None:
        return False
    found = connection.execute(
        text("SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(:t)"),
        {"t": table},
    ).first()
    return found is not None


def set_column_storage(connection: Connection, table: str, column: str, storage: str) -> bool:
    """Postgres: ``ALTER TABLE table ALTER COLUMN column SET STORAGE storage``, in this
    transaction; whether ``table`` is distributed, so its shards still need
    :func:`set_shard_column_storage`.

    Citus does not propagate SET STORAGE ("alter table command is currently
    unsupported"). Its documented last resort is manual propagation: change the
    coordinator's table with DDL propagation off (here), then every shard.
    """
    statement = f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET STORAGE {storage}'
    distributed = is_distributed(connection, table)
    if distributed:
        connection.execute(text("SET LOCAL citus.enable_ddl_propagation TO off"))
    connection.execute(text(statement))
    if distributed:
        connection.execute(text("SET LOCAL citus.enable_ddl_propagation TO on"))
    return distributed


def set_shard_column_storage(
    connection: Connection, table: str, column: str, storage: str
) -> list[str]:
    """Citus: SET STORAGE on every shard of distributed ``table``; each failure's message.

    ``run_command_on_shards`` works on connections of its own, outside the caller's
    transaction: shards that transaction changed stay locked until it commits and the
    shard commands would wait for ever (Citus sees no deadlock), hence the bounded wait.
    """
    rows = connection.execute(
        text(
            "SELECT shardid, result FROM run_command_on_shards(CAST(:t AS regclass), "
            ":command) WHERE NOT success"
        ),
        {
            "t": table,
            "command": "SET lock_timeout = '10s'; "
            f'ALTER TABLE %s ALTER COLUMN "{column}" SET STORAGE {storage}',
        },
    ).all()
    return [f"shard {row.shardid}: {row.result}" for row in rows]
