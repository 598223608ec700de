"""The seam between memstore and its SQL backends: one ABC, one registry, one folder per backend.

:func:`dialect_for` resolves the :class:`~memstore.dialects.base.Dialect` of an
engine, connection, session, SQLAlchemy dialect, URL or name. Each backend is one
package, ``memstore.backends.<name>`` (``<name>`` is SQLAlchemy's name of the
dialect), whose ``DIALECT`` is an instance of a :class:`Dialect` subclass; the
registry imports it by name the first time it is asked for, as SQLAlchemy loads
``sqlalchemy.dialects.<name>``. Nothing else lists the backends: adding one is
adding its folder.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.engine import Dialect as SQLDialect
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.dialects.base import AppendedSlot, Dialect, EngineOptions, Lock, SlotAppend
from memstore.errors import ConfigurationError

__all__ = [
    "BACKENDS",
    "AppendedSlot",
    "Dialect",
    "EngineOptions",
    "Lock",
    "SlotAppend",
    "backend_name",
    "dialect_for",
    "dialect_of_url",
    "dialects",
]

# The package whose subpackages are the backends (imported by name, never statically:
# they sit above everything they implement, memstore.search included).
BACKENDS = "memstore.backends"

_loaded: dict[str, Dialect] = {}


def _load(name: str) -> Dialect | None:
    """The dialect of backend package ``name``, imported on first use; None if there is none."""
    found = _loaded.get(name)
    if found is not None:
        return found
    if not name.isidentifier():
        return None
    module_name = f"{BACKENDS}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only a missing backend means "none": a backend whose own import fails
        # (a driver not installed) says so.
        if exc.name in (module_name, BACKENDS):
            return None
        raise
    dialect = getattr(module, "DIALECT", None)
    if not isinstance(dialect, Dialect) or dialect.name != name:
        raise TypeError(f"{module_name}.DIALECT must be the Dialect named {name!r}")
    _loaded[name] = dialect
    return dialect


def dialects() -> tuple[Dialect, ...]:
    """Every backend memstore runs on: each package under :data:`BACKENDS`, loaded."""
    package = importlib.import_module(BACKENDS)
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.ispkg)
    return tuple(d for d in map(_load, names) if d is not None)


def backend_name(url: URL) -> str:
    """The backend ``url`` names (its scheme without the driver), known to memstore or not."""
    return url.get_backend_name()


def dialect_of_url(url: URL) -> Dialect | None:
    """The dialect ``url`` names (``postgres://`` too), None when memstore has none for it."""
    backend = backend_name(url)
    found = _load(backend)
    if found is not None:
        return found
    for dialect in dialects():
        if backend in dialect.bare_drivers:
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
    found = _load(name)
    if found is None:
        known = ", ".join(d.name for d in dialects())
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
