"""Make erased text unreadable from the database files, not only from queries.

What stays behind a delete, and how to remove it, is the backend's
(:meth:`~memstore.dialects.Dialect.purge_deleted_text`,
:meth:`~memstore.dialects.Dialect.truncate_log`); on PostgreSQL deleted tuples stay in
the heap, indexes and WAL until VACUUM and page reuse (see docs/guarantees.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore.dialects import dialect_for

__all__ = ["purge_full_text", "truncate_wal"]


async def purge_full_text(session: AsyncSession, tables: Iterable[str]) -> None:
    """Rewrite the full-text index of each of ``tables`` without deleted rows' terms."""
    await dialect_for(session).purge_deleted_text(session, tables)


async def truncate_wal(engine: AsyncEngine) -> bool:
    """Drop old page images of erased rows from the write-ahead log; False if readers kept it.

    Best effort after a committed erase: nothing is lost either way.
    """
    return await dialect_for(engine).truncate_log(engine)
