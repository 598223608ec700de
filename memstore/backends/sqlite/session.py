"""What SQLite needs of a caller's transaction memstore writes in."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["begun"]


async def begun(session: AsyncSession) -> None:
    """Make a caller's SQLite transaction real before memstore writes in it.

    The sqlite3 module's default transaction handling sends BEGIN only before an
    INSERT, UPDATE or DELETE. A SAVEPOINT sent first would open the outermost
    transaction itself, and its RELEASE would commit memstore's rows on their
    own, whatever the caller does with its transaction later.
    """
    connection = await session.connection()
    raw = (await connection.get_raw_connection()).driver_connection
    if raw is not None and not raw.in_transaction:
        # IMMEDIATE, as memstore's own writers: the write lock now, waiting busy_timeout.
        await connection.exec_driver_sql("BEGIN IMMEDIATE")
