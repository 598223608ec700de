"""Which database a URL names, and an engine for it (made by its backend, memstore/backends/)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import QueuePool

from memstore.db.slowlog import check_threshold, install_slow_query_log, slow_query_ms_from_env
from memstore.dialects import (
    Dialect,
    EngineOptions,
    backend_name,
    dialect_for,
    dialect_of_url,
    dialects,
)
from memstore.errors import ConfigurationError, NotFound
from memstore.telemetry.engine_events import install_statement_spans

__all__ = [
    "DEFAULT_URL",
    "PG_COMMAND_TIMEOUT_S",
    "PG_CONNECT_TIMEOUT_S",
    "SQLITE_BUSY_TIMEOUT_MS",
    "create_engine",
    "pool_capacity",
    "redacted",
    "require_existing_database",
    "resolve_url",
    "sqlite_file",
]

# The embedded store in the working directory (the backend adds its driver).
DEFAULT_URL = "sqlite:///./memstore.db"
# How long a SQLite writer waits for another process's write lock before the
# call fails with Unavailable (documented in docs/guarantees.md).
SQLITE_BUSY_TIMEOUT_MS = 30_000
# A stopped or unreachable Postgres must fail calls with Unavailable rather than
# hang them: bound connecting and every single statement.
PG_CONNECT_TIMEOUT_S = 10.0
PG_COMMAND_TIMEOUT_S = 60.0


# Query values never shown in a message or a rendered URL.
_SECRET = frozenset({"password", "sslpassword"})

_URL_HINT = (
    "use sqlite:///path/to/memstore.db or postgresql://user:password@host/dbname"
    "[?sslmode=require&connect_timeout=10]"
)


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
    """``url`` with its password hidden (also a ``password`` query parameter), for messages."""
    parsed = url if isinstance(url, URL) else _parse(url)
    hidden = {key: "***" for key in parsed.query if key in _SECRET}
    return parsed.update_query_dict(hidden).render_as_string(hide_password=True)


def resolve_url(url: str | None) -> str:
    """Argument, else ``$MEMSTORE_URL``, else the embedded SQLite file; driver added if missing.

    Raises :class:`ConfigurationError` for anything that is not a URL of a
    supported backend (an empty or blank one included: ``--url ""`` or an empty
    ``$MEMSTORE_URL`` is a mistake, an unset shell variable or a lost quote, and
    quietly falling back to ``./memstore.db`` would create a database there), or a
    URL with a parameter its backend cannot honour (:meth:`Dialect.check_url`).
    """
    raw = url if url is not None else os.environ.get("MEMSTORE_URL")
    if raw is None:
        raw = DEFAULT_URL
    elif not raw.strip():
        source = "the database URL" if url is not None else "$MEMSTORE_URL"
        raise ConfigurationError(
            f"{source} is empty; {_URL_HINT} (or leave it unset for the default)", url=raw
        )
    parsed = _parse(raw)
    dialect = dialect_of_url(parsed)
    if dialect is None:
        raise ConfigurationError(
            f"unsupported database backend {backend_name(parsed)!r} in "
            f"{redacted(parsed)!r}; memstore runs on SQLite and PostgreSQL: {_URL_HINT}",
            url=redacted(parsed),
        )
    parsed = dialect.with_driver(parsed)
    dialect.check_url(parsed)  # refuses what no connection could honour, now
    return parsed.render_as_string(hide_password=False)


def sqlite_file(url: str | None) -> Path | None:
    """The file a SQLite ``url`` names (None for Postgres, ``:memory:`` or a URI filename)."""
    parsed = make_url(resolve_url(url))
    return _dialect(parsed).database_file(parsed)


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
    path = _dialect(parsed).database_file(parsed)
    if path is None:
        return resolved
    database = parsed.database or ""
    _dialect(parsed).check_location(parsed)  # a missing directory stays a ConfigurationError
    if not path.exists():
        raise NotFound(
            f"no SQLite database at {database!r}; pass the --url of an existing store "
            "(or create one with `memstore migrate`)"
        )
    return resolved


def create_engine(
    url: str | None = None,
    *,
    sqlite_busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
    connect_timeout: float | None = None,
    command_timeout: float | None = PG_COMMAND_TIMEOUT_S,
    slow_query_ms: float | None = None,
    **kwargs: Any,
) -> AsyncEngine:
    """An engine for ``url``; the timeouts apply to their backend only.

    ``connect_timeout`` (seconds) wins over the URL's; with neither it is
    :data:`PG_CONNECT_TIMEOUT_S`. A Postgres URL's libpq parameters (``sslmode``,
    ``application_name``...) become the driver's arguments (the backend's URL handling);
    ``connect_args`` given here win over them.

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
        drivers = ", ".join(d.async_driver for d in dialects())
        raise ConfigurationError(
            f"cannot use {redacted(resolved)!r}: {exc}; {_URL_HINT} (the driver is added "
            f"for you: {drivers})",
            url=redacted(resolved),
        ) from exc
    if slow_query_ms is not None:
        install_slow_query_log(engine, slow_query_ms)
    install_statement_spans(engine, dialect_for(engine).name)
    return engine


def _create(
    resolved: str,
    *,
    sqlite_busy_timeout_ms: int,
    connect_timeout: float | None,
    command_timeout: float | None,
    **kwargs: Any,
) -> AsyncEngine:
    parsed = make_url(resolved)
    options = EngineOptions(
        busy_timeout_ms=sqlite_busy_timeout_ms,
        connect_timeout=connect_timeout,
        command_timeout=command_timeout,
        engine_kwargs=kwargs,
    )
    return _dialect(parsed).create_engine(parsed, options)


def _dialect(resolved: URL) -> Dialect:
    found = dialect_of_url(resolved)
    assert found is not None, "resolve_url refuses every other backend"
    return found


def pool_capacity(engine: AsyncEngine) -> int | None:
    """How many connections the engine's pool hands out at once (None: no fixed bound)."""
    pool = engine.sync_engine.pool
    if not isinstance(pool, QueuePool):
        return None  # e.g. SQLite :memory: (one static connection), NullPool
    overflow = int(getattr(pool, "_max_overflow", 0))
    return None if overflow < 0 else pool.size() + overflow
