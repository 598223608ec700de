"""How Postgres connections behave: set up once, checked at each checkout.

pgvector's codec, the tenant setting reset at checkout (doubling as the liveness
check), and a connect whose timeout counts only time the event loop was free.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.db.connections import FOREIGN_USE, OWN_CONNECTION, TENANT_SETTING

__all__ = [
    "LIVENESS_IDLE_S",
    "configure_postgres",
    "connect_args_of",
    "connect_postgres",
    "register_vector_codec",
    "remember_connect_args",
]

# Connection-record flag: the current (or last) checkout was not one of ours.
_FOREIGN = FOREIGN_USE
# Connection-record entry: when the connection last went back to the pool.
_CHECKED_IN = "memstore_checked_in"
# A pooled Postgres connection idle longer than this gets the checkout RESET even
# after memstore's own use: its round trip is also the liveness check that finds
# connections a server failover or an idle timeout dropped without a close.
LIVENESS_IDLE_S = 5.0


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

    A connection made outside the pool (the change listener, :mod:`.signal`)
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
