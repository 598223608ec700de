"""What distributing on Citus refuses, and why; each says that nothing was changed."""

from __future__ import annotations

from typing import ClassVar

from memstore.errors import MemstoreError

__all__ = [
    "CitusLayoutConflict",
    "CitusNoWorkers",
    "CitusNotInstalled",
    "SchemaNotDistributable",
]


class _AboutDatabase(MemstoreError):
    """An error about one database, kept in ``database``."""

    message: ClassVar[str]

    def __init__(self, database: str) -> None:
        self.database = database
        super().__init__(self.message.format(database=database))


class _AboutTables(MemstoreError):
    """An error about some tables; ``problems`` says what is wrong with each."""

    message: ClassVar[str]

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(self.message.format(problems="; ".join(problems)))


class CitusNotInstalled(_AboutDatabase):
    """``memstore citus --apply`` needs a database with the ``citus`` extension."""

    message = (
        "the citus extension is not installed in database {database!r}, so it is not "
        "a Citus coordinator; nothing was changed. Install Citus on every node, run "
        "CREATE EXTENSION citus on the coordinator, add the workers "
        "(citus_add_node), then re-run `memstore citus --apply`, or run the statements "
        "`memstore citus` prints yourself"
    )


class CitusNoWorkers(_AboutDatabase):
    """The coordinator has no active worker node to place shards on."""

    message = (
        "the Citus coordinator of database {database!r} has no active worker node "
        "(pg_dist_node lists no worker), so distributing would put every shard on the "
        "coordinator or fail; nothing was changed. Add the workers with "
        "SELECT citus_add_node('host', port) in this database on the coordinator, then "
        "re-run `memstore citus --apply`"
    )


class CitusLayoutConflict(_AboutTables):
    """A memstore table is already a Citus table, but not in the shape memstore plans."""

    message = (
        "memstore tables are already Citus tables of another kind than `memstore citus` "
        "plans: {problems}. Nothing was changed; undo them (undistribute_table) or fix them "
        "(update_distributed_table_colocation), then re-run `memstore citus --apply`"
    )


class SchemaNotDistributable(_AboutTables):
    """A model breaks a distribution rule (a key without ``user_id``, an undeclared table)."""

    message = (
        "the schema cannot be distributed by user_id: {problems}. "
        "Fix the models (see memstore/db/distribution.py)"
    )
