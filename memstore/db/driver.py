"""A pooled connection for reads that are one statement, without SQLAlchemy's ``Connection``.

Checking a connection out through ``AsyncEngine.connect()`` builds an
``AsyncConnection`` and a ``Connection`` (events, execution options, autobegin
bookkeeping) around the pool's checkout: on a short read that cost as much as
the query (docs/BENCHMARKS.md). :func:`driver_checkout` takes the pool's
connection itself (the pool's checkout and checkin events still run: the
Postgres tenant-setting RESET and liveness check, the SQLite reset) and hands
out a :class:`DriverReader`, on which :func:`memstore.db.prepared.fetch` sends
statements to the driver. Anything else run on it (``execute``, ``scalar``)
gets a SQLAlchemy ``Connection`` made on the same pooled connection, so it
behaves as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar, overload

from sqlalchemy.engine import Connection, Result
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.selectable import TypedReturnsRows
from sqlalchemy.util import greenlet_spawn
from sqlalchemy.util.typing import TupleAny, TypeVarTuple, Unpack

from memstore.db.connections import FOREIGN_USE

__all__ = ["DriverReader", "driver_checkout"]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")
_Params = Mapping[str, Any]


class DriverReader:
    """One pooled connection of ``engine``, checked out for a read of one statement."""

    def __init__(self, engine: AsyncEngine, pooled: PoolProxiedConnection) -> None:
        self.engine = engine
        self.pooled = pooled
        self.options: Mapping[str, Any] = engine.sync_engine.get_execution_options()
        self._connection: AsyncConnection | None = None

    @property
    def dialect(self) -> Any:
        return self.engine.sync_engine.dialect

    async def connection(self) -> AsyncConnection:
        """A SQLAlchemy connection on this pooled connection (made once, when asked for)."""
        if self._connection is None:
            sync = await greenlet_spawn(Connection, self.engine.sync_engine, self.pooled)
            self._connection = AsyncConnection(self.engine, sync)
        return self._connection

    @overload
    async def execute(
        self, statement: TypedReturnsRows[Unpack[_Ts]], parameters: _Params | None = None
    ) -> Result[Unpack[_Ts]]: ...

    @overload
    async def execute(
        self, statement: Executable, parameters: _Params | None = None
    ) -> Result[Unpack[TupleAny]]: ...

    async def execute(
        self, statement: Executable, parameters: _Params | None = None
    ) -> Result[Unpack[TupleAny]]:
        return await (await self.connection()).execute(statement, parameters)

    @overload
    async def scalar(
        self, statement: TypedReturnsRows[_T], parameters: _Params | None = None
    ) -> _T | None: ...

    @overload
    async def scalar(self, statement: Executable, parameters: _Params | None = None) -> Any: ...

    async def scalar(self, statement: Executable, parameters: _Params | None = None) -> Any:
        return await (await self.connection()).scalar(statement, parameters)

    async def invalidate(self) -> None:
        """The connection is lost: the pool must not hand it out again."""
        if self._connection is not None:
            await self._connection.invalidate()
        else:
            await greenlet_spawn(self.pooled.invalidate)

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        else:
            await greenlet_spawn(self.pooled.close)


@asynccontextmanager
async def driver_checkout(engine: AsyncEngine) -> AsyncIterator[DriverReader]:
    """A :class:`DriverReader` on a connection of ``engine``'s pool, returned at the end.

    A failed checkout raises what ``engine.connect()`` raises for it, so it
    translates as it always did.
    """
    sync_engine = engine.sync_engine
    dialect = sync_engine.dialect
    try:
        pooled = await greenlet_spawn(sync_engine.pool.connect)
    except dialect.loaded_dbapi.Error as error:
        # As Connection() does when the pool cannot give it a connection: wrap
        # the driver's error (and invalidate the pool on a disconnect).
        await greenlet_spawn(
            Connection._handle_dbapi_exception_noconnection,  # noqa: SLF001
            error,
            dialect,
            sync_engine,
        )
        raise
    # As ``engine_connect`` marks the unit of work's own connections: statements
    # on it leave no session-level setting behind (memstore.backends' checkout hooks).
    pooled.info[FOREIGN_USE] = False
    reader = DriverReader(engine, pooled)
    try:
        yield reader
    finally:
        await reader.close()
