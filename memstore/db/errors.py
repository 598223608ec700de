"""Translation of driver errors into the memstore exception tree.

Repositories run their SQL inside :func:`translated`; integrity errors are
identified by constraint name (Postgres reports it, SQLite reports the columns,
which the naming convention lets us map back).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import exc as sa_exc

from memstore.errors import Conflict, InvalidInput, MemstoreError, Unavailable

__all__ = ["constraint_name", "translated"]

_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (?:index '([^']+)'|(.+))$")
_SQLITE_CHECK = re.compile(r"CHECK constraint failed: (\S+)")


def constraint_name(error: sa_exc.DBAPIError) -> str | None:
    cause = error.orig.__cause__ if error.orig is not None else None
    name = getattr(cause, "constraint_name", None) or getattr(error.orig, "constraint_name", None)
    if name:
        return str(name)
    message = str(error.orig)
    if match := _SQLITE_UNIQUE.search(message):
        if match.group(1):
            return match.group(1)
        columns = [c.strip().split(".") for c in match.group(2).split(",")]
        table = columns[0][0]
        return f"uq_{table}_" + "_".join(c[-1] for c in columns)
    if match := _SQLITE_CHECK.search(message):
        return match.group(1)
    return None


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Re-raise driver errors from ``what`` (a short description) as MemstoreError."""
    try:
        yield
    except MemstoreError:
        raise
    except sa_exc.IntegrityError as error:
        name = constraint_name(error)
        raise Conflict(f"{what}: constraint {name or 'unknown'} violated") from error
    except sa_exc.StatementError as error:
        orig = error.orig
        if isinstance(orig, ValueError | TypeError) and not isinstance(error, sa_exc.DBAPIError):
            raise InvalidInput(f"{what}: {orig}") from error
        if isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError):
            raise Unavailable(f"{what}: database unavailable ({orig})") from error
        if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
            raise Unavailable(f"{what}: connection lost ({orig})") from error
        raise
    except (OSError, ConnectionError) as error:
        raise Unavailable(f"{what}: database unreachable ({error})") from error
