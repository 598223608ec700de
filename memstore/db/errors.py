"""Translation of driver errors into the memstore exception tree.

Repositories run their SQL inside :func:`translated`; integrity errors are
identified by constraint name (Postgres reports it, SQLite reports the columns,
which the naming convention lets us map back).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint
from sqlalchemy import exc as sa_exc

from memstore.db.base import Base
from memstore.dialects import dialects
from memstore.errors import (
    ConfigurationError,
    Conflict,
    DatabaseError,
    InvalidInput,
    MemstoreError,
    PermissionDenied,
    SchemaOutOfDate,
    Unavailable,
)

__all__ = ["constraint_name", "constraint_table", "sqlstate", "translated"]

_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (?:index '([^']+)'|(.+))$")
_SQLITE_CHECK = re.compile(r"CHECK constraint failed: (\S+)")
_SQLITE_NOT_NULL = re.compile(r"NOT NULL constraint failed: (\w+)\.(\w+)")
# Citus relays a worker's error without its constraint / table fields; the message
# names the shard's objects (pk_episodes_102008, relation "facts_102024").
_PG_CONSTRAINT = re.compile(r'violates (?:unique|check|foreign key|exclusion) constraint "([^"]+)"')
_PG_RELATION = re.compile(r'(?:of|for|on) (?:relation|table) "([^"]+)"')
_SHARD_SUFFIX = re.compile(r"_\d+$")
# A worker's unique/primary-key violation that Citus relays as an internal error
# (SQLSTATE XX000): so it reports a COPY into a distributed table.
_PG_UNIQUE_VIOLATION = re.compile(r'duplicate key value violates unique constraint "[^"]+"')


def _constraint_names() -> set[str]:
    names: set[str] = set()
    for table in Base.metadata.tables.values():
        names |= {str(c.name) for c in table.constraints if c.name}
        names |= {str(i.name) for i in table.indexes if i.name}
    return names


def _unsharded(name: str, known: set[str]) -> str:
    """The logical name of a Citus shard's object (``name_<shardid>``), if it is one."""
    if name in known:
        return name
    base = _SHARD_SUFFIX.sub("", name)
    return base if base in known else name


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
        return _unique_named(table, [c[-1] for c in columns]) or (
            f"uq_{table}_" + "_".join(c[-1] for c in columns)
        )
    if match := _SQLITE_CHECK.search(message):
        return match.group(1)
    if match := _PG_CONSTRAINT.search(message):
        return _unsharded(match.group(1), _constraint_names())
    return None


def _unique_named(table_name: str, columns: list[str]) -> str | None:
    """The declared name of the key of ``table_name`` over exactly ``columns``.

    SQLite reports a violated key by its columns only; the metadata knows its name.
    """
    table = Base.metadata.tables.get(table_name)
    if table is None:
        return None
    keys: list[tuple[str | None, list[str]]] = [
        (str(c.name) if c.name else None, [col.name for col in c.columns])
        for c in table.constraints
        if isinstance(c, PrimaryKeyConstraint | UniqueConstraint)
    ]
    keys += [(i.name, [col.name for col in i.columns]) for i in table.indexes if i.unique]
    for name, key_columns in keys:
        if name and key_columns == columns:
            return name
    return None


def constraint_table(error: sa_exc.DBAPIError, constraint: str | None) -> str | None:
    """The table of a violated constraint: reported by Postgres, else found by name."""
    cause = error.orig.__cause__ if error.orig is not None else None
    name = getattr(cause, "table_name", None) or getattr(error.orig, "table_name", None)
    if name:
        return str(name)
    if match := _SQLITE_NOT_NULL.search(str(error.orig)):
        return match.group(1)
    if match := _PG_RELATION.search(str(error.orig)):
        return _unsharded(match.group(1), set(Base.metadata.tables))
    if constraint is None:
        return None
    for table in Base.metadata.tables.values():
        names = {c.name for c in table.constraints} | {i.name for i in table.indexes}
        if constraint in names:
            return str(table.name)
    return None


def _refused_value(error: sa_exc.IntegrityError) -> bool:
    """A CHECK or NOT NULL violation: the value was bad, no concurrent writer involved."""
    if sqlstate(error) in ("23514", "23502"):
        return True
    message = str(error.orig)
    return "CHECK constraint failed" in message or "NOT NULL constraint failed" in message


def sqlstate(error: sa_exc.DBAPIError) -> str | None:
    """The Postgres SQLSTATE of a driver error, if it has one."""
    code = getattr(error.orig, "sqlstate", None) or getattr(error.orig, "pgcode", None)
    return str(code) if code else None


def _misconfiguration(error: sa_exc.DBAPIError) -> str | None:
    # Each backend knows its own driver's errors; the others answer None.
    for dialect in dialects():
        why = dialect.misconfiguration(error)
        if why is not None:
            return why
    return None


def _schema_missing(error: sa_exc.DBAPIError) -> bool:
    return any(dialect.schema_missing(error) for dialect in dialects())


def _unavailable_state(code: str | None) -> bool:
    # 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect
    # now; 53: insufficient resources (too many connections, disk full);
    # 57014: statement cancelled (statement_timeout).
    return code is not None and (
        code.startswith(("08", "53")) or code in ("57P01", "57P02", "57P03", "57014")
    )


def _tls_misconfigured(error: BaseException) -> str | None:
    """What to fix when connecting failed on TLS itself: no retry helps, only the URL."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return (
            f"the server's TLS certificate failed verification ({error.verify_message}); "
            "give the authority that signed it as sslrootcert, or connect by a host name the "
            "certificate names"
        )
    # asyncpg's own refusal, a bare ConnectionError (a refused TCP connect is a subclass).
    if type(error) is ConnectionError and "rejected SSL upgrade" in str(error):
        return (
            f"{error}: the server does not accept TLS, which the URL's sslmode requires; "
            "turn ssl on in the server's configuration, or lower sslmode (prefer)"
        )
    return None


def _unanswered(what: str, error: BaseException) -> Unavailable:
    """A lost connection, or no answer in time: the server may be up and merely busy."""
    if isinstance(error, TimeoutError):
        return Unavailable(
            f"{what}: the database did not answer in time ({error!r}): connecting took longer "
            "than connect_timeout, or a statement ran past command_timeout (an overloaded "
            "server, or a statement waiting on a lock, e.g. a write to a shard of a "
            "distributed table that is being moved); retry, or raise engine_options "
            "connect_timeout / command_timeout"
        )
    return Unavailable(f"{what}: database unreachable ({error!r})")


def _key_conflict(what: str, error: sa_exc.DBAPIError) -> Conflict:
    name = constraint_name(error)
    table = constraint_table(error, name)
    where = f"constraint {name or 'unknown'}" + (f" of table {table}" if table else "")
    return Conflict(
        f"{what}: {where} violated (another row already holds this key, or a "
        "concurrent writer got there first); re-read, then retry or change the key",
        constraint=name,
        table=table,
    )


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Re-raise driver errors from ``what`` (a short description) as MemstoreError.

    A SQLite URL naming a file that is not a database is :class:`ConfigurationError`.
    Lost or refused connections, timeouts and SQLite's "database is locked"
    become :class:`Unavailable`; serialisation failures and deadlocks become
    :class:`Conflict` (both retryable); values the database refuses become
    :class:`InvalidInput`.
    """
    try:
        yield
    except MemstoreError:
        raise
    except sa_exc.IntegrityError as error:
        name = constraint_name(error)
        table = constraint_table(error, name)
        where = f"constraint {name or 'unknown'}" + (f" of table {table}" if table else "")
        if _refused_value(error):
            raise InvalidInput(
                f"{what}: the database refused a value ({where} violated); nothing was "
                "written, fix the value",
                constraint=name,
                table=table,
            ) from error
        raise _key_conflict(what, error) from error
    except sa_exc.StatementError as error:
        orig = error.orig
        if isinstance(orig, ValueError | TypeError) and not isinstance(error, sa_exc.DBAPIError):
            raise InvalidInput(f"{what}: {orig}") from error
        if not isinstance(error, sa_exc.DBAPIError):
            if orig is not None and (tls := _tls_misconfigured(orig)) is not None:
                raise ConfigurationError(f"{what}: {tls}") from error
            if isinstance(orig, OSError | ConnectionError):  # TimeoutError is an OSError
                raise _unanswered(what, orig) from error
            raise
        code = sqlstate(error)
        misconfigured = _misconfiguration(error)
        if misconfigured is not None:  # no retry helps until someone fixes the URL or server
            raise ConfigurationError(f"{what}: {misconfigured}") from error
        if _schema_missing(error):
            raise SchemaOutOfDate(
                f"{what}: the database lacks a table, column or function this memstore "
                f"uses ({orig}); run `memstore migrate` against it"
            ) from error
        if (
            isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError)
            or error.connection_invalidated
            or _unavailable_state(code)
        ):
            raise Unavailable(f"{what}: database unavailable ({orig})") from error
        if code == "42501":  # insufficient_privilege, incl. row-level security refusals
            raise PermissionDenied(f"{what}: {orig}") from error
        if code == "XX000" and _PG_UNIQUE_VIOLATION.search(str(orig)):
            raise _key_conflict(what, error) from error
        if code in ("40001", "40P01"):
            raise Conflict(f"{what}: concurrent transaction conflict; retry ({orig})") from error
        if code == "54000":  # program_limit_exceeded, e.g. an index entry over 2,704 bytes
            raise InvalidInput(f"{what}: a value is too large for the database ({orig})") from error
        if isinstance(error, sa_exc.DataError):
            raise InvalidInput(f"{what}: the database refused a value ({orig})") from error
        raise DatabaseError(
            f"{what}: the database refused the statement ({orig})", sqlstate=code
        ) from error
    except sa_exc.TimeoutError as error:  # no pooled connection became free in time
        # Not an outage: the server answers, but every pooled connection stayed
        # busy (held outside the unit of work's permits, or by slow statements).
        raise Unavailable(
            f"{what}: every pooled database connection stayed busy for the pool's "
            f"checkout timeout ({error}); retry, or give the pool more connections "
            "(engine_options pool_size / max_overflow / pool_timeout)"
        ) from error
    except (OSError, ConnectionError) as error:
        if (tls := _tls_misconfigured(error)) is not None:
            raise ConfigurationError(f"{what}: {tls}") from error
        raise _unanswered(what, error) from error
