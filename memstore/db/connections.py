"""How memstore's connections behave, per dialect: set up once, checked at each checkout.

SQLite: pragmas (WAL, busy timeout, foreign keys, secure delete), math functions
for recall, who takes the write lock when (``BEGIN IMMEDIATE`` unless the
transaction is read-only), and a failed connect that stops its worker thread.
Postgres: pgvector's codec, the tenant setting reset at checkout (doubling as the
liveness check), and a connect whose timeout counts only time the event loop was free.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from threading import Thread
from typing import Any

from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "LIVENESS_IDLE_S",
    "ONE_STATEMENT",
    "OWN_CONNECTION",
    "READ_ONLY",
    "TENANT_SETTING",
    "configure_postgres",
    "configure_sqlite",
    "connect_args_of",
    "connect_postgres",
    "connect_sqlite",
    "register_vector_codec",
    "remember_connect_args",
]

# The Postgres setting the row-level security policies compare user_id with
# (memstore.schema.rls); reset whenever a pooled connection is checked out.
TENANT_SETTING = "memstore.user_id"
# Execution option: a transaction that will not write may start with a plain
# BEGIN on SQLite, so readers do not queue behind the write lock.
READ_ONLY = "memstore_read_only"
# Execution option: the connection runs a read that is one statement, atomic on
# its own, so SQLite starts no explicit transaction for it (no BEGIN, no hops).
ONE_STATEMENT = "memstore_one_statement"
# Execution option of the unit of work's own connections (memstore.db.unit):
# their statements never leave a session-level tenant setting behind, so the
# next checkout of the same server connection need not RESET it.
OWN_CONNECTION = "memstore_own_connection"
# Connection-record flag: the current (or last) checkout was not one of ours.
_FOREIGN = "memstore_foreign_use"
# Connection-record entry: when the connection last went back to the pool.
_CHECKED_IN = "memstore_checked_in"
# A pooled Postgres connection idle longer than this gets the checkout RESET even
# after memstore's own use: its round trip is also the liveness check that finds
# connections a server failover or an idle timeout dropped without a close.
LIVENESS_IDLE_S = 5.0


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


def configure_postgres(engine: AsyncEngine) -> None:
    # Importing it teaches SQLAlchemy's reflection the `vector` type (inspection,
    # `alembic check`); lazy so SQLite-only users never import pgvector.
    import pgvector.sqlalchemy  # noqa: F401

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.run_async(register_vector_codec)

    @event.listens_for(engine.sync_engine, "checkout")
    def on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        # Code that ran its own SQL on this connection may have left a
        # session-level tenant setting (set_config(..., false)); the row-level
        # security policies would show that tenant's rows to the next
        # transaction that names none. Outside any transaction, so a rollback
        # cannot bring the old value back. The RESET is a round trip, as long as
        # the query of a small read, so it is skipped when the connection's last
        # user was memstore's own unit of work, which sets the tenant only
        # transaction-locally and was busy a moment ago (LIVENESS_IDLE_S). A
        # connection the server has closed (restart) is still replaced here: the
        # pool retries with a new one.
        foreign = record.info.get(_FOREIGN, True)
        record.info[_FOREIGN] = True  # until engine_connect says it is ours
        if dbapi_connection.driver_connection.is_closed():
            raise DisconnectionError("the server closed this connection")
        idle = time.monotonic() - record.info.get(_CHECKED_IN, float("-inf"))
        if not foreign and idle < LIVENESS_IDLE_S:
            return
        try:
            dbapi_connection.run_async(_reset_tenant_setting)
        except Exception as exc:  # the pool replaces the connection and retries
            raise DisconnectionError(f"could not reset {TENANT_SETTING}: {exc}") from exc

    @event.listens_for(engine.sync_engine, "checkin")
    def on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN] = time.monotonic()

    @event.listens_for(engine.sync_engine, "engine_connect")
    def on_engine_connect(connection: Any) -> None:
        if connection.get_execution_options().get(OWN_CONNECTION):
            connection.connection.info[_FOREIGN] = False


# The asyncpg arguments each memstore engine connects with, by its dialect (shared by
# the engine's execution-option copies, kept across dispose()).
_CONNECT_ARGS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def remember_connect_args(engine: AsyncEngine, connect_args: dict[str, Any]) -> None:
    """Keep the arguments ``engine``'s connections are made with, for :func:`connect_args_of`."""
    _CONNECT_ARGS[engine.sync_engine.dialect] = dict(connect_args)


def connect_args_of(engine: AsyncEngine) -> dict[str, Any]:
    """The ``connect_args`` of a memstore engine (TLS, timeouts, server settings); else ``{}``.

    A connection made outside the pool (the listener of :mod:`memstore.db.signal`)
    needs them as much as the pool's do: the URL alone does not carry them.
    """
    return dict(_CONNECT_ARGS.get(engine.sync_engine.dialect, {}))


# How often _LoopWatch looks whether the event loop is taking turns.
_LOOP_TICK_S = 0.05


class _LoopWatch:
    """How long the event loop was free to run callbacks while it watched.

    A tick that runs on time adds its interval; one that ran late because the
    loop was busy elsewhere (a burst of thousands of tasks, a blocking call)
    adds at most two intervals, however late it was.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.free = 0.0
        self._last = self._loop.time()
        self._handle = self._loop.call_later(_LOOP_TICK_S, self._tick)

    def _tick(self) -> None:
        now = self._loop.time()
        self.free += min(now - self._last, 2 * _LOOP_TICK_S)
        self._last = now
        self._handle = self._loop.call_later(_LOOP_TICK_S, self._tick)

    def stop(self) -> None:
        self._handle.cancel()


async def connect_postgres(*args: Any, **kwargs: Any) -> Any:
    """``asyncpg.connect`` whose timeout counts only time the event loop was free.

    asyncpg's connect timeout runs on the loop's clock, so a handshake whose
    replies wait for a loop saturated by a burst of calls times out though the
    server answered at once, and the call would fail as if the database were
    unreachable. An attempt that timed out with the loop free for less than
    half the timeout is retried; one that had the loop to itself (a server
    that is down or silent) fails as before, and a refused connection fails at
    once.
    """
    import asyncpg  # lazy: only Postgres engines get here

    timeout = float(kwargs.get("timeout") or 60.0)
    while True:
        watch = _LoopWatch()
        try:
            return await asyncpg.connect(*args, **kwargs)
        except TimeoutError:
            if watch.free >= timeout / 2:
                raise
        finally:
            watch.stop()


async def _reset_tenant_setting(connection: Any) -> None:
    await connection.execute(f"RESET {TENANT_SETTING}")


async def register_vector_codec(connection: Any) -> None:
    """Teach an asyncpg connection pgvector's binary codec (once the extension exists)."""
    # The codec can only be registered once the extension exists (after
    # migrations); before that there is nothing to decode.
    has_vector = await connection.fetchval("SELECT 1 FROM pg_type WHERE typname = 'vector'")
    if not has_vector:
        return
    from pgvector.asyncpg import register_vector  # lazy: optional at import time

    await register_vector(connection)
