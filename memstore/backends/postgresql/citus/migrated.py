"""After a migration on Citus: the vector storage the coordinator got, on every shard."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.db.distribution import shards_follow_column_storage
from memstore.errors import ConfigurationError
from memstore.models.search import VECTOR_TABLES

__all__ = ["shards_follow_vector_storage"]


async def shards_follow_vector_storage(engine: AsyncEngine) -> None:
    """The vector storage a revision set on the coordinator, on every shard.

    Revision 0010 sets it on the shards itself, but not reliably when an earlier
    revision of the same run altered the table (memstore.db.distribution); after
    the run committed, no lock stands in the way.
    """
    for table in VECTOR_TABLES:
        async with engine.begin() as connection:
            failed = await connection.run_sync(shards_follow_column_storage, table, "embedding")
        if failed:
            raise ConfigurationError(
                f"the migration committed, but the vector storage of {len(failed)} shard(s) "
                f"of distributed table {table} could not follow the coordinator's "
                f"({failed[0]}); run `memstore migrate` again",
                setting="citus",
            )
