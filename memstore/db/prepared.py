"""Reads that are one statement, run on the driver connection under SQLAlchemy's.

Around a short read, SQLAlchemy Core's ``execute`` costs more than the query
(docs/BENCHMARKS.md, "Per-call fixed cost"): compiling-cache lookups, the
cursor and execution context, result metadata, ``Row`` objects, and on SQLite
a thread hop for the cursor. The per-call reads (fact history and as-of reads,
recall) hand their statements to :func:`fetch` instead, which:

* compiles each statement once per dialect to the text SQLAlchemy itself would
  send, with its parameter order and the bind and result processors of its
  types (so values go in and come out exactly as through SQLAlchemy);
* sends it on the driver connection of the reader's pooled connection: asyncpg
  ``fetch``, which prepares the text once per connection in asyncpg's statement
  cache (the connection's ``plan_cache_mode`` still decides custom or generic
  plans); aiosqlite ``execute_fetchall``, one thread hop;
* decodes the rows into named tuples (index and attribute access, as ``Row``).

The connection still comes from the pool through :class:`Database` (permits,
checkout hooks, the transaction when there is one). A statement that needs
what only SQLAlchemy does (expanding or literal parameters), a connection
memstore does not own (a caller's session, ``store.bind``), or a transaction
SQLAlchemy has begun but not yet sent, goes through SQLAlchemy as before.
Driver errors become the DBAPI errors SQLAlchemy would raise, so
:func:`memstore.db.errors.translated` gives the same MemstoreError; every
statement is shown to the observers of :mod:`memstore.db.observers`.
"""

from __future__ import annotations

import time
from collections import namedtuple
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import Compiled

from memstore.db.connections import OWN_CONNECTION
from memstore.db.crosstenant import CROSS_TENANT_OPTION
from memstore.db.driver import DriverReader
from memstore.db.observers import Executed, observers
from memstore.db.unit import Reader
from memstore.dialects import Dialect as Backend
from memstore.dialects import dialect_for
from memstore.telemetry.statements import statement_observed, statement_start

__all__ = ["fetch", "through_sqlalchemy"]

_Processor = Callable[[Any], Any] | None

# Set by :func:`through_sqlalchemy`: every read takes SQLAlchemy's path.
_BYPASSED: ContextVar[bool] = ContextVar("memstore_hot_path_off", default=False)


@contextmanager
def through_sqlalchemy() -> Iterator[None]:
    """Run this context's reads through SQLAlchemy's execute, not the driver's.

    For comparisons (tests that both paths return the same, benchmarks of both).
    """
    token = _BYPASSED.set(True)
    try:
        yield
    finally:
        _BYPASSED.reset(token)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One statement compiled for one dialect, with what turns values in and out."""

    sql: str
    names: tuple[str, ...]  # the parameters in the driver's order
    binds: tuple[_Processor, ...]
    defaults: Mapping[str, Any]  # values bound in the statement itself
    decoded: tuple[tuple[int, Callable[[Any], Any]], ...]  # (column, its result processor)
    row: Any  # the named tuple class of its rows
    backend: Backend  # what sends it to the driver and names the database in records
    cross_tenant: str | None
    compiled: Compiled


# (statement, dialect name) -> compiled form, or None for "through SQLAlchemy". The
# statements handed here are built once per shape and kept by their builders.
_COMPILED: dict[tuple[Executable, str], _Prepared | None] = {}
_MAX_COMPILED = 2048


def _prepare(stmt: Executable, dialect: Dialect) -> _Prepared | None:
    key = (stmt, dialect.name)
    try:
        return _COMPILED[key]
    except KeyError:
        pass
    backend = dialect_for(dialect)
    compiled: Any = stmt.compile(dialect=dialect)  # type: ignore[attr-defined]
    prepared: _Prepared | None = None
    columns = getattr(compiled, "_result_columns", None)
    if (
        compiled.positional
        and columns
        and not compiled.literal_execute_params
        and not compiled.post_compile_params
    ):
        names = tuple(compiled.positiontup or ())
        processors = compiled._bind_processors  # noqa: SLF001
        keys = [c.keyname for c in columns]
        prepared = _Prepared(
            sql=compiled.string,
            names=names,
            binds=tuple(processors.get(n) for n in names),
            defaults={
                name: bind.effective_value
                for name, bind in compiled.binds.items()
                if not bind.required
            },
            decoded=tuple(
                (i, processor)
                for i, c in enumerate(columns)
                if (processor := backend.driver_decoder(c.type, dialect)) is not None
            ),
            row=namedtuple("Row", keys, rename=True),
            backend=backend,
            cross_tenant=stmt.get_execution_options().get(CROSS_TENANT_OPTION),
            compiled=compiled,
        )
    if len(_COMPILED) >= _MAX_COMPILED:
        _COMPILED.clear()
    _COMPILED[key] = prepared
    return prepared


async def fetch(reader: Reader, stmt: Executable, params: Mapping[str, Any]) -> Sequence[Any]:
    """The rows of ``stmt`` with ``params`` on ``reader``'s connection, as named tuples."""
    if _BYPASSED.get():
        return (await reader.execute(stmt, params)).all()
    if isinstance(reader, DriverReader):
        pooled, options, engine = reader.pooled, reader.options, reader.engine.sync_engine
        invalidate = reader.invalidate
    else:
        conn = await reader.connection() if isinstance(reader, AsyncSession) else reader
        sync_conn = conn.sync_connection
        options = sync_conn.get_execution_options() if sync_conn is not None else {}
        if not options.get(OWN_CONNECTION) or sync_conn is None:
            return (await reader.execute(stmt, params)).all()
        pooled, engine, invalidate = (
            await conn.get_raw_connection(),
            conn.sync_engine,
            conn.invalidate,
        )
        adapter: Any = pooled.dbapi_connection
        if dialect_for(engine).transaction_unsent(adapter):
            # SQLAlchemy has begun a transaction it has not yet sent: its execute does.
            return (await reader.execute(stmt, params)).all()
    prepared = _prepare(stmt, engine.dialect)
    if prepared is None:
        return (await reader.execute(stmt, params)).all()
    defaults = prepared.defaults
    values = tuple(
        (p(v) if p is not None else v)
        for p, v in zip(
            prepared.binds,
            (params[n] if n in params else defaults[n] for n in prepared.names),
            strict=True,
        )
    )
    seen = observers()
    record = None
    if seen:
        record = Executed(
            sql=prepared.sql,
            parameters=values,
            dialect=prepared.backend.name,
            engine=engine,
            cross_tenant=prepared.cross_tenant or options.get(CROSS_TENANT_OPTION),
            compiled=prepared.compiled,
        )
        for before, _ in seen:
            if before is not None:
                before(record)
    traced = statement_start()
    started = time.perf_counter()
    failed = False
    driver: Any = pooled.driver_connection
    try:
        records = await prepared.backend.driver_fetch(driver, prepared.sql, values)
    except Exception as error:
        failed = True
        wrapped, cause = await _dbapi_error(
            error, engine.dialect, pooled, invalidate, prepared, values
        )
        if traced is not None:
            statement_observed(
                prepared.sql, backend=prepared.backend.name, start_ns=traced, error=wrapped
            )
        raise wrapped from cause
    finally:
        if record is not None:
            done = _finished(record, time.perf_counter() - started, failed)
            for _, after in seen:
                if after is not None:
                    after(done)
    if traced is not None:
        statement_observed(
            prepared.sql, backend=prepared.backend.name, start_ns=traced, rows=len(records)
        )
    make = prepared.row._make
    if not prepared.decoded:
        return [make(r) for r in records]
    rows = []
    for found in records:
        row = list(found)
        for i, decode in prepared.decoded:
            row[i] = decode(row[i])
        rows.append(make(row))
    return rows


def _finished(record: Executed, elapsed: float, failed: bool) -> Executed:
    return Executed(
        sql=record.sql,
        parameters=record.parameters,
        dialect=record.dialect,
        engine=record.engine,
        cross_tenant=record.cross_tenant,
        compiled=record.compiled,
        elapsed=elapsed,
        failed=failed,
    )


async def _dbapi_error(
    error: Exception,
    dialect: Dialect,
    pooled: PoolProxiedConnection,
    invalidate: Callable[[], Awaitable[None]],
    prepared: _Prepared,
    values: tuple[Any, ...],
) -> tuple[Exception, Exception]:
    """``error`` as SQLAlchemy raises it (a DBAPIError from the adapted error), and its cause.

    A lost connection is invalidated, so the pool replaces it, as SQLAlchemy does.
    """
    adapter: Any = pooled.dbapi_connection
    dbapi_error = dialect.loaded_dbapi.Error
    try:
        adapter._handle_exception(error)  # noqa: SLF001  (raises the adapted DBAPI error)
    except Exception as adapted:
        if not isinstance(adapted, dbapi_error):
            return adapted, error
        lost = dialect.is_disconnect(adapted, adapter, None)
        if lost:
            await invalidate()
        wrapped = sa_exc.DBAPIError.instance(
            prepared.sql,
            values,
            adapted,
            dbapi_error,
            connection_invalidated=lost,
            dialect=dialect,
        )
        return wrapped, adapted
    return error, error
