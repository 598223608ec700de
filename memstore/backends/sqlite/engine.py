"""A SQLite engine: a file whose directory must exist, connections set up per pragma."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from memstore.backends.sqlite.connections import configure_sqlite, connect_sqlite
from memstore.db.engine import redacted
from memstore.db.pool import KeepingPool
from memstore.dialects import EngineOptions
from memstore.errors import ConfigurationError

__all__ = ["check_directory", "create_sqlite_engine"]


def create_sqlite_engine(url: URL, options: EngineOptions) -> AsyncEngine:
    check_directory(url)
    kwargs = dict(options.engine_kwargs)
    connect_args = dict(kwargs.pop("connect_args", None) or {})
    connect_args.setdefault("async_creator_fn", connect_sqlite)
    if "pool" not in kwargs:
        if _file_database(url):
            # As SQLAlchemy's own pool for a file (5 kept, up to 15 at once), but the
            # 10 extra connections stay while the store is busy (memstore.db.pool).
            # An in-memory database keeps SQLAlchemy's single static connection.
            kwargs.setdefault("poolclass", KeepingPool)
        # Returned connections are rolled back only when a transaction is open
        # (configure_sqlite's reset hook), not always.
        kwargs.setdefault("pool_reset_on_return", None)
    engine = create_async_engine(url, connect_args=connect_args, **kwargs)
    configure_sqlite(engine, busy_timeout_ms=options.busy_timeout_ms)
    return engine


def _file_database(url: URL) -> bool:
    # The test SQLAlchemy's SQLite dialects choose their pool by.
    return url.database not in (None, "", ":memory:") and url.query.get("mode") != "memory"


def check_directory(url: URL) -> None:
    # SQLite creates the file but not its directory, and cannot open a directory;
    # the driver's "unable to open database file" would look like an outage
    # (Unavailable) although no retry helps.
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database).expanduser()
    if path.is_dir():
        raise ConfigurationError(
            f"cannot open SQLite database {database!r}: it is a directory; name a file "
            "in it, e.g. sqlite:///path/to/dir/memstore.db",
            url=redacted(url),
        )
    directory = path.parent
    if not directory.is_dir():
        raise ConfigurationError(
            f"cannot open SQLite database {database!r}: directory {str(directory)!r} does "
            "not exist (unable to open database file); create it or fix the URL",
            url=redacted(url),
        )
