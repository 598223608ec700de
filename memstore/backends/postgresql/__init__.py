"""PostgreSQL (with pgvector, optionally distributed by Citus) through asyncpg.

Everything that is Postgres's alone lives in this folder; the rest of memstore
reaches it through :data:`DIALECT` (:class:`memstore.dialects.Dialect`). The hooks
import their modules when first called, so loading the dialect stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL
from sqlalchemy.sql.functions import Function
from sqlalchemy.types import TypeEngine

from memstore.dialects.base import AppendedSlot, Dialect, EngineOptions, Lock, SlotAppend

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Table
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

    from memstore.db.signal import ChangeSignal
    from memstore.search.tables import SearchHalf

__all__ = ["DIALECT", "PostgresDialect"]


# Connecting can never succeed until someone changes the URL or the server's
# roles/databases: these are not outages, so not Unavailable.
_CONFIGURATION_STATES = {
    "3D000": "create the database (or `memstore migrate` after creating it) or fix the URL",
    "28000": "create the role / allow it in pg_hba.conf, or fix the user in the URL",
    "28P01": "fix the password in the URL",
}


class PostgresDialect(Dialect):
    name = "postgresql"
    label = "PostgreSQL"
    bare_drivers = ("postgresql", "postgres")
    async_driver = "postgresql+asyncpg"
    embedded = False
    migrates_on_own_engine = True
    serial_writes = False
    # The asyncpg adapter would send BEGIN and COMMIT as two more round trips;
    # in autocommit the statement is its own transaction.
    statement_options = {"isolation_level": "AUTOCOMMIT"}  # noqa: RUF012 (read only)
    snapshot_isolation = "REPEATABLE READ"
    row_level_security = True
    notifies = True
    native_vectors = True
    arrays = True
    naive_timestamps = False
    copies_rows = True
    distributable = True
    vectors_in_process = False

    def insert(self, table: Any) -> Any:
        return pg_insert(table)

    def greatest(self, *values: Any) -> Function[Any]:
        return func.greatest(*values)

    def json_type(self, *, none_as_null: bool) -> TypeEngine[Any]:
        # JSONB: indexable and compact.
        return JSONB(none_as_null=none_as_null)

    def database_file(self, url: URL) -> Path | None:
        return None

    def rls_statements(self, table: str, *, setting: str, enable: bool, force: bool) -> list[str]:
        from memstore.backends.postgresql.rls import rls_statements

        return rls_statements(table, setting=setting, enable=enable, force=force)

    async def rls_state(self, conn: AsyncConnection, table: str) -> tuple[bool, bool, bool]:
        from memstore.backends.postgresql.rls import rls_state

        return await rls_state(conn, table)

    async def after_migration(self, engine: AsyncEngine) -> None:
        from memstore.backends.postgresql.citus.migrated import shards_follow_vector_storage

        await shards_follow_vector_storage(engine)

    def distribution_plan(self) -> Any:
        from memstore.backends.postgresql.citus import citus_plan

        return citus_plan()

    async def distribution_status(self, url: str | None) -> Any:
        from memstore.backends.postgresql.citus import citus_status

        return await citus_status(url)

    async def distribute(self, url: str | None) -> list[str]:
        from memstore.backends.postgresql.citus import apply_citus

        return await apply_citus(url)

    def misconfiguration(self, error: Any) -> str | None:
        from memstore.db.errors import sqlstate

        hint = _CONFIGURATION_STATES.get(sqlstate(error) or "")
        return None if hint is None else f"{error.orig}; {hint}"

    def driver_decoder(self, type_: Any, sql_dialect: Any) -> Callable[[Any], Any] | None:
        from sqlalchemy.sql import sqltypes

        from memstore.db.types import UTCDateTime

        # asyncpg already returns timestamptz as UTC datetimes and float8 as floats (Float's
        # numeric processor, chosen by a type OID fetch() does not report, would only turn
        # a float into a float).
        if isinstance(type_, UTCDateTime):
            return None
        if isinstance(type_, sqltypes.Float) and not type_.asdecimal:
            return None
        return super().driver_decoder(type_, sql_dialect)

    async def driver_fetch(self, driver: Any, sql: str, values: Sequence[Any]) -> Sequence[Any]:
        rows: Sequence[Any] = await driver.fetch(sql, *values)
        return rows

    def transaction_unsent(self, adapter: Any) -> bool:
        return bool(
            adapter.isolation_level != "autocommit" and adapter._transaction is None  # noqa: SLF001
        )

    def schema_missing(self, error: Any) -> bool:
        from memstore.db.errors import sqlstate

        # undefined table, column, function, object (a type such as pgvector's)
        return sqlstate(error) in ("42P01", "42703", "42883", "42704")

    def vector_type(self, *, many: bool) -> TypeEngine[Any] | None:
        from memstore.backends.postgresql.types import PgVector, PgVectorArray

        return PgVectorArray() if many else PgVector()

    def bind_vectors(self, rows: Any) -> Any:
        from pgvector import Vector  # lazy: the postgres extra's

        # Vector objects, not arrays: asyncpg reads nested sequences as a
        # multi-dimensional array of numbers.
        return [Vector(row) for row in rows]

    def check_url(self, url: URL) -> None:
        from memstore.backends.postgresql.url import postgres_connect_args

        postgres_connect_args(url)

    def create_engine(self, url: URL, options: EngineOptions) -> AsyncEngine:
        from memstore.backends.postgresql.engine import create_postgres_engine

        return create_postgres_engine(url, options)

    async def watch_changes(self, signal: ChangeSignal) -> None:
        from memstore.backends.postgresql.signal import listen

        await listen(signal)

    async def join(self, session: AsyncSession, *, write: bool) -> None:
        from memstore.backends.postgresql import session as sessions

        await sessions.join(session)

    async def set_tenant(self, session: AsyncSession, setting: str, tenant: str) -> None:
        from memstore.backends.postgresql import session as sessions

        await sessions.set_tenant(session, setting, tenant)

    async def lock(self, session: AsyncSession, lock: Lock, *, wait: bool = True) -> bool:
        from memstore.backends.postgresql.locks import advisory_lock

        return await advisory_lock(session, lock, wait=wait)

    async def announce(self, session: AsyncSession, channel: str, payload: str) -> None:
        from memstore.backends.postgresql.signal import announce

        await announce(session, channel, payload)

    async def append_slot(
        self, reader: AsyncSession | AsyncConnection, append: SlotAppend
    ) -> AppendedSlot | None:
        from memstore.backends.postgresql.append import append_slot

        return await append_slot(reader, append)

    async def advance_sequences(self, session: AsyncSession, table: Table) -> None:
        from memstore.backends.postgresql.sequences import advance_sequences

        await advance_sequences(session, table)

    async def change_vector_width(
        self, conn: AsyncConnection, dim: int, tables: Sequence[str]
    ) -> list[str]:
        from memstore.backends.postgresql.vectors import change_vector_width

        return await change_vector_width(conn, dim, tables)

    async def build_vector_index(self, conn: AsyncConnection) -> None:
        from memstore.backends.postgresql.vectors import build_vector_index

        await build_vector_index(conn)

    async def vector_width_committed(self, engine: AsyncEngine, pending: list[str]) -> None:
        from memstore.backends.postgresql.vectors import set_shard_storage

        await set_shard_storage(engine, pending)

    def search(self) -> SearchHalf:
        from memstore.backends.postgresql.recall import SEARCH

        return SEARCH


DIALECT = PostgresDialect()
