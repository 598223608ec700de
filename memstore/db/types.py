"""Portable column types chosen per dialect."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["JSONDoc", "UTCDateTime"]


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend.

    SQLite has no timezone support, so values are normalised to UTC and stored
    naive there; Postgres keeps ``timestamptz``. Naive input is a programming
    error and is refused rather than guessed.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("naive datetime refused; pass a timezone-aware datetime")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


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

    def bind_processor(self, dialect: Dialect) -> Any:
        to_text = super().bind_processor(dialect)

        def process(value: Any) -> Any:
            out = to_text(value) if to_text is not None else value
            if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(
                    out, str):
                return out.encode()
            return out

        return process


# JSONB on Postgres (indexable, compact); plain JSON text elsewhere.
JSONDoc: Any = JSON().with_variant(JSONB(), "postgresql").with_variant(_SQLiteJSON(), "sqlite")
