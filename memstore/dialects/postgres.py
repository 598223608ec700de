"""PostgreSQL (with pgvector, optionally distributed by Citus) through asyncpg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL
from sqlalchemy.sql.functions import Function
from sqlalchemy.types import TypeEngine

from memstore.dialects.base import Dialect

__all__ = ["POSTGRES", "PostgresDialect"]


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
    sequences = True
    copies_rows = True
    distributable = True
    keeps_deleted_text = False
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


POSTGRES = PostgresDialect()
