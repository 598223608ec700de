"""Portable column types chosen per dialect."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import JSON, DateTime, LargeBinary
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine, UserDefinedType

from memstore.dialects import dialect_for, dialects

__all__ = [
    "JSONDoc",
    "NullableJSONDoc",
    "PgVector",
    "PgVectorArray",
    "UTCDateTime",
    "Vector",
    "VectorList",
]


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend.

    SQLite has no timezone support, so values are normalised to UTC and stored
    naive there; Postgres keeps ``timestamptz``. Naive input is a programming
    error and is refused rather than guessed.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    @property
    def python_type(self) -> type[datetime]:
        return datetime

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("naive datetime refused; pass a timezone-aware datetime")
        value = value.astimezone(UTC)
        if dialect_for(dialect).naive_timestamps:
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _json(*, none_as_null: bool) -> Any:
    """Plain JSON, with each dialect's own document type as its variant."""
    json: Any = JSON(none_as_null=none_as_null)
    for dialect in dialects():
        json = json.with_variant(dialect.json_type(none_as_null=none_as_null), dialect.name)
    return json


# JSONB on Postgres (indexable, compact); plain JSON text elsewhere.
JSONDoc: Any = _json(none_as_null=False)
# The same, but Python None is SQL NULL rather than the JSON document ``null``,
# for optional columns that queries test with IS NULL.
NullableJSONDoc: Any = _json(none_as_null=True)


class PgVector(UserDefinedType[Any]):
    """pgvector's ``vector`` column; values pass straight to the asyncpg codec.

    The engine registers pgvector's binary asyncpg codec, which takes and
    returns numpy arrays, so no text conversion happens here. The width is
    fixed by the migration (``vector(dim)``), not by the model.
    """

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "VECTOR"


class PgVectorArray(UserDefinedType[Any]):
    """pgvector's ``vector[]``, without a width: a row's passages can outlive a change of
    embedder width (``memstore reembed`` recomputes them) without a column rewrite."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "VECTOR[]"


class _Float32Type(TypeDecorator[np.ndarray]):
    """float32 arrays: a pgvector type (``postgres_type``) on Postgres, bytes elsewhere."""

    impl = LargeBinary
    postgres_type: type[UserDefinedType[Any]]

    @property
    def python_type(self) -> type[np.ndarray]:
        return np.ndarray

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect_for(dialect).native_vectors:
            return dialect.type_descriptor(self.postgres_type())
        return dialect.type_descriptor(LargeBinary())


class Vector(_Float32Type):
    """A float32 embedding: pgvector ``vector`` on Postgres, raw float32 bytes elsewhere."""

    postgres_type = PgVector
    cache_ok = True  # read from each class itself, not inherited

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        array = np.asarray(value, dtype=np.float32)
        if dialect_for(dialect).native_vectors:
            return array
        return array.tobytes()

    def process_result_value(self, value: Any, dialect: Dialect) -> np.ndarray | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray | memoryview):
            return np.frombuffer(bytes(value), dtype=np.float32)
        return _float32(value)


def _float32(value: Any) -> np.ndarray:
    """A vector read from Postgres (a pgvector ``Vector`` from the asyncpg codec) as float32."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


_WIDTH = np.dtype("<u4")


class VectorList(_Float32Type):
    """Several float32 vectors of one width, as a 2-D array (one vector per row).

    Postgres: ``vector[]``, so that SQL can score each one. Elsewhere: the width
    as a little-endian uint32, then the float32 values.
    """

    postgres_type = PgVectorArray
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        array = np.asarray(value, dtype=np.float32)
        if array.ndim != 2:
            raise ValueError(f"a vector list is a 2-D array, not shape {array.shape}")
        backend = dialect_for(dialect)
        if backend.native_vectors:
            return backend.bind_vectors(array)
        return np.array([array.shape[1]], dtype=_WIDTH).tobytes() + array.tobytes()

    def process_result_value(self, value: Any, dialect: Dialect) -> np.ndarray | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray | memoryview):
            raw = bytes(value)
            width = int(np.frombuffer(raw[: _WIDTH.itemsize], dtype=_WIDTH)[0])
            flat = np.frombuffer(raw[_WIDTH.itemsize :], dtype=np.float32)
            return flat.reshape(-1, width) if width else flat.reshape(0, 0)
        rows = [_float32(v) for v in value]
        return np.stack(rows) if rows else np.zeros((0, 0), np.float32)
