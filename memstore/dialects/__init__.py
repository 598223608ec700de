"""The seam between memstore and its SQL backends: one module per dialect, one registry.

:func:`dialect_for` resolves the :class:`~memstore.dialects.base.Dialect` of an
engine, connection, session, SQLAlchemy dialect, URL or name. Adding a backend is
one module with a :class:`Dialect` subclass, listed in :data:`DIALECTS` (and its
search statements, registered in :mod:`memstore.search.backends`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.engine import Dialect as SQLDialect
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.dialects.base import Dialect
from memstore.dialects.postgres import POSTGRES
from memstore.dialects.sqlite import SQLITE
from memstore.errors import ConfigurationError

__all__ = [
    "DIALECTS",
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "backend_name",
    "dialect_for",
    "dialect_of_url",
]

# Every backend memstore runs on.
DIALECTS: tuple[Dialect, ...] = (POSTGRES, SQLITE)
_BY_NAME = {d.name: d for d in DIALECTS}


def backend_name(url: URL) -> str:
    """The backend ``url`` names (its scheme without the driver), known to memstore or not."""
    return url.get_backend_name()


def dialect_of_url(url: URL) -> Dialect | None:
    """The dialect ``url`` names (``postgres://`` too), None when memstore has none for it."""
    backend = backend_name(url)
    for dialect in DIALECTS:
        if backend == dialect.name or backend in dialect.bare_drivers:
            return dialect
    return None


def dialect_for(bind: Any) -> Dialect:
    """The dialect of ``bind``: an engine, connection or session (sync or async), a
    SQLAlchemy dialect, or a dialect's name.

    :class:`~memstore.errors.ConfigurationError` for a backend memstore does not run on.
    """
    if isinstance(bind, Dialect):
        return bind
    if isinstance(bind, AsyncSession):
        bind = bind.get_bind()
    name = bind if isinstance(bind, str) else _sql_dialect(bind).name
    found = _BY_NAME.get(name)
    if found is None:
        known = ", ".join(sorted(_BY_NAME))
        raise ConfigurationError(
            f"unsupported database dialect {name!r}; memstore runs on {known}",
            setting="url",
        )
    return found


def _sql_dialect(bind: Any) -> SQLDialect:
    if isinstance(bind, SQLDialect):
        return bind
    dialect = getattr(bind, "dialect", None)
    if not isinstance(dialect, SQLDialect):
        raise TypeError(f"no SQL dialect on {type(bind).__name__}")
    return dialect
