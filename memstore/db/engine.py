"""Engine construction per dialect: SQLite pragmas and write locking, Postgres pool and codecs."""

from __future__ import annotations

import asyncio
import math
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError, InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import QueuePool

from memstore.db import jsontext
from memstore.db.slowlog import check_threshold, install_slow_query_log, slow_query_ms_from_env
from memstore.errors import ConfigurationError, NotFound

__all__ = [
    "DEFAULT_URL",
    "LIVENESS_IDLE_S",
    "ONE_STATEMENT",
    "OWN_CONNECTION",
    "PG_COMMAND_TIMEOUT_S",
    "PG_CONNECT_TIMEOUT_S",
    "READ_ONLY",
    "SQLITE_BUSY_TIMEOUT_MS",
    "TENANT_SETTING",
    "create_engine",
    "pool_capacity",
    "redacted",
    "register_vector_codec",
    "require_existing_database",
    "resolve_url",
]

DEFAULT_URL = "sqlite+aiosqlite:///./memstore.db"
# How long a SQLite writer waits for another process's write lock before the
# call fails with Unavailable (documented in the README's Guarantees).
SQLITE_BUSY_TIMEOUT_MS = 30_000
# A stopped or unreachable Postgres must fail calls with Unavailable rather than
# hang them: bound connecting and every single statement.
PG_CONNECT_TIMEOUT_S = 10.0
PG_COMMAND_TIMEOUT_S = 60.0
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


_URL_HINT = "use sqlite:///path/to/memstore.db or postgresql://user:password@host/dbname"


def _parse(raw: str) -> URL:
    try:
        return make_url(raw)
    except (ArgumentError, ValueError) as exc:
        # make_url's own message quotes the whole string; never echo a password.
        raise ConfigurationError(
            f"not a database URL: {_redacted_text(raw)!r}; {_URL_HINT}", url=_redacted_text(raw)
        ) from exc


def _redacted_text(raw: str) -> str:
    # Unparseable, so no URL object can hide the password: cut "user:secret@".
    scheme, sep, rest = raw.partition("://")
    if sep and "@" in rest:
        creds, _, host = rest.rpartition("@")
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return raw


def redacted(url: str | URL) -> str:
    """``url`` with its password hidden, for messages."""
    parsed = url if isinstance(url, URL) else _parse(url)
    return parsed.render_as_string(hide_password=True)


def resolve_url(url: str | None) -> str:
    """Argument, else ``$MEMSTORE_URL``, else the embedded SQLite file; driver added if missing.

    Raises :class:`ConfigurationError` for anything that is not a URL of a
    supported backend.
    """
    raw = url or os.environ.get("MEMSTORE_URL") or DEFAULT_URL
    parsed = _parse(raw)
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql", "postgres"):
        raise ConfigurationError(
            f"unsupported database backend {backend!r} in {redacted(parsed)!r}; memstore "
            f"runs on SQLite and PostgreSQL: {_URL_HINT}",
            url=redacted(parsed),
        )
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    elif parsed.drivername == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    return parsed.render_as_string(hide_password=False)


def require_existing_database(url: str | None) -> str:
    """``url`` resolved; :class:`NotFound` if it names a SQLite file that does not exist
    (:class:`ConfigurationError` if not even its directory does).

    Opening a missing SQLite file creates it, so tools that work on an existing
    store (everything but ``memstore migrate`` and ``memstore demo``) check first
    and never leave an empty database behind a mistyped path. A Postgres
    database is never created by connecting, so it needs no check here.
    """
    resolved = resolve_url(url)
    parsed = make_url(resolved)
    if parsed.get_backend_name() != "sqlite":
        return resolved
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return resolved
    _check_sqlite_directory(parsed)  # a missing directory stays a ConfigurationError
    if not Path(database).expanduser().exists():
        raise NotFound(
            f"no SQLite database at {database!r}; pass the --url of an existing store "
            "(or create one with `memstore migrate`)"
        )
    return resolved


def create_engine(
    url: str | None = None,
    *,
    sqlite_busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
    connect_timeout: float = PG_CONNECT_TIMEOUT_S,
    command_timeout: float | None = PG_COMMAND_TIMEOUT_S,
    slow_query_ms: float | None = None,
    **kwargs: Any,
) -> AsyncEngine:
    """An engine for ``url``; the timeouts apply to their backend only.

    ``slow_query_ms`` (default ``$MEMSTORE_SLOW_QUERY_MS``, else off) logs each
    statement that takes at least that long (see :mod:`memstore.db.slowlog`).
    """
    if slow_query_ms is None:
        slow_query_ms = slow_query_ms_from_env()
    else:
        slow_query_ms = check_threshold(slow_query_ms)
    resolved = resolve_url(url)
    try:
        engine = _create(
            resolved,
            sqlite_busy_timeout_ms=sqlite_busy_timeout_ms,
            connect_timeout=connect_timeout,
            command_timeout=command_timeout,
            **kwargs,
        )
    except (ArgumentError, InvalidRequestError, ImportError) as exc:  # e.g. a sync driver
        raise ConfigurationError(
            f"cannot use {redacted(resolved)!r}: {exc}; {_URL_HINT} (the driver is added "
            "for you: sqlite+aiosqlite, postgresql+asyncpg)",
            url=redacted(resolved),
        ) from exc
    if slow_query_ms is not None:
        install_slow_query_log(engine, slow_query_ms)
    return engine


def _create(
    resolved: str,
    *,
    sqlite_busy_timeout_ms: int,
    connect_timeout: float,
    command_timeout: float | None,
    **kwargs: Any,
) -> AsyncEngine:
    parsed = make_url(resolved)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        _check_sqlite_directory(parsed)
        engine = create_async_engine(resolved, **kwargs)
        _configure_sqlite(engine, busy_timeout_ms=sqlite_busy_timeout_ms)
    elif backend == "postgresql":
        kwargs.setdefault("pool_size", 5)
        kwargs.setdefault("max_overflow", 10)
        # No pool_pre_ping: the checkout hook's RESET is already a round trip
        # that fails on a dead connection, and the pool then replaces it.
        kwargs.setdefault("pool_recycle", 1800)
        kwargs.setdefault("json_serializer", jsontext.dumps)
        connect_args = dict(kwargs.pop("connect_args", None) or {})
        connect_args.setdefault("timeout", connect_timeout)
        connect_args.setdefault("command_timeout", command_timeout)
        connect_args.setdefault("async_creator_fn", _connect_postgres)
        # asyncpg prepares every statement; after five runs Postgres may switch
        # to a generic plan that ignores the tenant's size, which made recall on
        # a 400-row tenant 2x slower (docs/bench-notes.md). Planning per call
        # costs well under a millisecond.
        server_settings = dict(connect_args.get("server_settings") or {})
        server_settings.setdefault("plan_cache_mode", "force_custom_plan")
        connect_args["server_settings"] = server_settings
        engine = create_async_engine(resolved, connect_args=connect_args, **kwargs)
        _configure_postgres(engine)
    else:  # resolve_url refused every other backend
        raise AssertionError(backend)
    return engine


def pool_capacity(engine: AsyncEngine) -> int | None:
    """How many connections the engine's pool hands out at once (None: no fixed bound)."""
    pool = engine.sync_engine.pool
    if not isinstance(pool, QueuePool):
        return None  # e.g. SQLite :memory: (one static connection), NullPool
    overflow = int(getattr(pool, "_max_overflow", 0))
    return None if overflow < 0 else pool.size() + overflow


def _check_sqlite_directory(url: URL) -> None:
    # SQLite creates the file but not its directory; the driver's "unable to open
    # database file" would look like an outage (Unavailable) although no retry helps.
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    directory = Path(database).expanduser().parent
    if not directory.is_dir():
        raise ConfigurationError(
            f"cannot open SQLite database {database!r}: directory {str(directory)!r} does "
            "not exist (unable to open database file); create it or fix the URL",
            url=redacted(url),
        )


def _configure_sqlite(engine: AsyncEngine, *, busy_timeout_ms: int) -> None:
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


def _configure_postgres(engine: AsyncEngine) -> None:
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


async def _connect_postgres(*args: Any, **kwargs: Any) -> Any:
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
