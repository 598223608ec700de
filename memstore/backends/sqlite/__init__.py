"""SQLite through aiosqlite: the embedded, single-file, single-writer backend.

Everything that is SQLite's alone lives in this folder; the rest of memstore
reaches it through :data:`DIALECT` (:class:`memstore.dialects.Dialect`). The hooks
import their modules when first called, so loading the dialect stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, func
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import URL
from sqlalchemy.engine import Dialect as SQLDialect
from sqlalchemy.sql.functions import Function
from sqlalchemy.types import TypeDecorator, TypeEngine

from memstore.dialects.base import AppendedSlot, Dialect, EngineOptions, SlotAppend

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

    from memstore.db.signal import ChangeSignal
    from memstore.search.tables import SearchHalf

__all__ = ["DIALECT", "SqliteDialect"]


class _SQLiteJSON(TypeDecorator[Any]):
    """JSON text on SQLite that keeps a top-level number exact.

    SQLite gives a column declared ``JSON`` NUMERIC affinity: the text of a bare
    number is converted on storage (``1.0`` becomes the integer 1, a 25-digit
    integer a lossy REAL). Such documents are bound as a BLOB of the same JSON
    text, which affinity leaves alone and the JSON reader decodes as before.
    Everything else is stored exactly as plain ``JSON`` stores it (same DDL).
    """

    impl = JSON
    cache_ok = True

    def bind_processor(self, dialect: SQLDialect) -> Any:
        to_text = super().bind_processor(dialect)

        def process(value: Any) -> Any:
            out = to_text(value) if to_text is not None else value
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and isinstance(out, str)
            ):
                return out.encode()
            return out

        return process


class SqliteDialect(Dialect):
    name = "sqlite"
    label = "SQLite"
    bare_drivers = ("sqlite",)
    async_driver = "sqlite+aiosqlite"
    embedded = True
    migrates_on_own_engine = False
    serial_writes = True
    statement_options: dict[str, Any] = {}  # noqa: RUF012 (read only)
    snapshot_isolation = None  # read transactions are snapshots already (WAL)
    row_level_security = False
    notifies = False
    native_vectors = False
    arrays = False
    naive_timestamps = True
    copies_rows = False
    distributable = False
    vectors_in_process = True

    def insert(self, table: Any) -> Any:
        return sqlite_insert(table)

    def greatest(self, *values: Any) -> Function[Any]:
        # SQLite's max() of two or more arguments is the scalar maximum.
        return func.max(*values)

    def json_type(self, *, none_as_null: bool) -> TypeEngine[Any]:
        return _SQLiteJSON(none_as_null=none_as_null)

    def database_file(self, url: URL) -> Path | None:
        database = url.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            return None
        return Path(database).expanduser()

    def misconfiguration(self, error: Any) -> str | None:
        if getattr(error.orig, "sqlite_errorname", None) == "SQLITE_NOTADB":
            # No retry opens another program's file as a store.
            return (
                "the SQLite URL names a file that is not a SQLite database "
                f"({error.orig}); fix the URL"
            )
        return None

    def driver_decoder(self, type_: Any, sql_dialect: Any) -> Callable[[Any], Any] | None:
        from memstore.db.types import UTCDateTime

        if isinstance(type_, UTCDateTime):
            return _utc_from_text  # SQLite's UTC text in one call
        return super().driver_decoder(type_, sql_dialect)

    async def driver_fetch(self, driver: Any, sql: str, values: Sequence[Any]) -> Sequence[Any]:
        rows: Sequence[Any] = await driver.execute_fetchall(sql, values)  # one thread hop
        return rows

    def schema_missing(self, error: Any) -> bool:
        return str(error.orig).startswith(("no such table: ", "no such column: "))

    def check_location(self, url: URL) -> None:
        from memstore.backends.sqlite.engine import check_directory

        check_directory(url)

    def create_engine(self, url: URL, options: EngineOptions) -> AsyncEngine:
        from memstore.backends.sqlite.engine import create_sqlite_engine

        return create_sqlite_engine(url, options)

    async def watch_changes(self, signal: ChangeSignal) -> None:
        from memstore.backends.sqlite.signal import watch

        await watch(signal)

    async def join(self, session: AsyncSession, *, write: bool) -> None:
        if write:
            from memstore.backends.sqlite.session import begun

            await begun(session)

    async def append_slot(
        self, reader: AsyncSession | AsyncConnection, append: SlotAppend
    ) -> AppendedSlot | None:
        from memstore.backends.sqlite.append import append_slot

        return await append_slot(reader, append)

    async def purge_deleted_text(self, session: AsyncSession, tables: Iterable[str]) -> None:
        from memstore.backends.sqlite.scrub import purge_full_text

        await purge_full_text(session, tables)

    async def truncate_log(self, engine: AsyncEngine) -> bool:
        from memstore.backends.sqlite.scrub import truncate_wal

        return await truncate_wal(engine)

    def search(self) -> SearchHalf:
        from memstore.backends.sqlite.search import SEARCH

        return SEARCH


DIALECT = SqliteDialect()


def _utc_from_text(value: str | None) -> datetime | None:
    # UTCDateTime is kept as naive UTC text in SQLAlchemy's ISO format.
    return None if value is None else datetime.fromisoformat(value).replace(tzinfo=UTC)
