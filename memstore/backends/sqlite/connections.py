"""How SQLite connections behave: set up once per connection, per transaction.

Pragmas (WAL, busy timeout, foreign keys, secure delete), math functions for
recall, who takes the write lock when (``BEGIN IMMEDIATE`` unless the transaction
is read-only), and a failed connect that stops its worker thread.
"""

from __future__ import annotations

import asyncio
import math
from threading import Thread
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.db.connections import ONE_STATEMENT, READ_ONLY

__all__ = ["configure_sqlite", "connect_sqlite"]


def configure_sqlite(engine: AsyncEngine, *, busy_timeout_ms: int) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module so BEGIN is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        # Deleted content is overwritten with zeros, so erased text does not
        # linger in freed pages or free space of the file (forget).
        cursor.execute("PRAGMA secure_delete = ON")
        _ensure_math_functions(dbapi_connection, cursor)
        cursor.close()

    @event.listens_for(engine.sync_engine, "reset")
    def on_reset(dbapi_connection: Any, _record: Any, state: Any) -> None:
        # Instead of the pool's rollback on return (off, create_sqlite_engine), which
        # costs a thread hop on every return, also of the many connections that
        # ran a read of one statement and hold no transaction.
        if (
            state.asyncio_safe
            and not state.transaction_was_reset
            and dbapi_connection.driver_connection.in_transaction
        ):
            dbapi_connection.rollback()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(connection: Any) -> None:
        # A deferred transaction that reads and then writes fails with
        # SQLITE_BUSY (no wait) if another process committed in between;
        # IMMEDIATE takes the write lock up front and honours busy_timeout.
        options = connection.get_execution_options()
        if options.get(ONE_STATEMENT):
            return  # autocommit: the statement is its own read transaction
        if options.get(READ_ONLY):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")


async def connect_sqlite(*args: Any, **kwargs: Any) -> Any:
    """``aiosqlite.connect`` that, when opening fails, returns only after its worker
    thread has stopped.

    aiosqlite runs each connection on a thread of its own. When opening the file
    fails, it queues the thread's stop but does not wait for it; the thread then
    reports the stop to the event loop, and if the loop has closed meanwhile (a
    command that fails at its first connect and exits) the thread dies with
    "RuntimeError: Event loop is closed" printed after the command's own error.
    """
    import aiosqlite  # lazy: only SQLite engines get here

    connection = aiosqlite.connect(*args, **kwargs)
    # aiosqlite offers no public handle on the thread (SQLAlchemy's own connect
    # reaches it the same way); before 0.22 the connection was itself the thread.
    worker = connection if isinstance(connection, Thread) else connection._thread  # noqa: SLF001
    # As SQLAlchemy's own connect does: a connection never closed must not keep
    # the interpreter from exiting.
    worker.daemon = True
    try:
        return await connection
    except BaseException:
        if worker.ident is not None:  # started: the stop is queued, wait for it
            await asyncio.to_thread(worker.join)
        raise


def _ensure_math_functions(dbapi_connection: Any, cursor: Any) -> None:
    """Recall's statement uses sqrt() and exp(), optional in SQLite builds before 3.35."""
    try:
        cursor.execute("SELECT sqrt(1.0), exp(0.0)")
        cursor.fetchall()
    except Exception:
        for name, fn in (("sqrt", _sqrt), ("exp", _exp)):
            dbapi_connection.create_function(name, 1, fn, deterministic=True)


def _sqrt(x: float | None) -> float | None:
    return None if x is None or x < 0 else math.sqrt(x)


def _exp(x: float | None) -> float | None:
    return None if x is None else math.exp(min(x, 700.0))
