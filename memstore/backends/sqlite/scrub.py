"""SQLite: make erased text unreadable from the database files, not only from queries.

Deleting a row is not enough on SQLite: FTS5 only appends "delete" markers, so
the erased words stay in the older index segments (``*_fts_data``) until those
are merged; freed pages keep their old bytes unless ``secure_delete`` is on
(set on every connection, :mod:`.connections`); and the write-ahead log keeps old
page images until it is checkpointed and truncated.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore.db.errors import translated

__all__ = ["FULL_TEXT_TABLES", "purge_full_text", "truncate_wal"]

log = logging.getLogger(__name__)

# Tables with an FTS5 index ``<name>_fts`` (migration 0003).
FULL_TEXT_TABLES = ("episodes", "facts")
# How long the post-erase checkpoint waits for readers before leaving the WAL
# for a later checkpoint (the erase itself has committed by then).
_CHECKPOINT_BUSY_MS = 2_000


async def purge_full_text(session: AsyncSession, tables: Iterable[str]) -> None:
    """Merge the FTS5 index of each of ``tables`` so deleted rows' terms are gone.

    FTS5 'optimize' rewrites the table's index as one segment without the
    deleted entries (the freed pages are zeroed by ``secure_delete``). Its cost
    grows with the whole full-text index, not with the erased rows; SQLite
    3.44's 'secure-delete' option would avoid that but is newer than the
    SQLite many Pythons ship.
    """
    for table in sorted(set(tables) & set(FULL_TEXT_TABLES)):
        fts = f"{table}_fts"
        with translated("purge full-text index"):
            await session.execute(text(f"INSERT INTO {fts} ({fts}) VALUES ('optimize')"))


async def truncate_wal(engine: AsyncEngine) -> bool:
    """Checkpoint the WAL into the database and truncate it; False if readers kept it.

    Best effort after a committed erase: old page images in the WAL hold the
    erased bytes. A connection still reading keeps them until a later
    checkpoint; nothing is lost either way.
    """
    try:
        async with engine.connect() as conn:
            # The raw connection: no BEGIN (a checkpoint cannot run inside one).
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            cursor = await raw.execute("PRAGMA busy_timeout")
            previous = (await cursor.fetchone() or (0,))[0]
            await raw.execute(f"PRAGMA busy_timeout = {_CHECKPOINT_BUSY_MS}")
            try:
                cursor = await raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                busy = (await cursor.fetchone() or (1,))[0]
            finally:
                await raw.execute(f"PRAGMA busy_timeout = {int(previous)}")
    except Exception:  # the erase has committed; its caller must not see a failure
        log.warning("memstore: WAL checkpoint after an erase failed", exc_info=True)
        return False
    if busy:
        log.info(
            "memstore: WAL not truncated after an erase (readers active); old page "
            "images stay in it until overwritten or a later checkpoint truncates it"
        )
    return not busy
