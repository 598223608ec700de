"""Portable column types chosen per dialect."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import JSON, DateTime, LargeBinary
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from memstore.dialects import dialect_for, dialects

__all__ = [
    "JSONDoc",
    "NullableJSONDoc",
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


class _Float32Type(TypeDecorator[np.ndarray]):
    """float32 arrays: the backend's vector type (``native_vectors``), else bytes."""

    impl = LargeBinary
    # Several vectors per value (a list of them), not one.
    many: bool

    @property
    def python_type(self) -> type[np.ndarray]:
        return np.ndarray

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        native = dialect_for(dialect).vector_type(many=self.many)
        return dialect.type_descriptor(native if native is not None else LargeBinary())


class Vector(_Float32Type):
    """A float32 embedding: the backend's vector type, else raw float32 bytes."""

    many = False
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
    """A vector the driver read from a native vector column, as float32."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


_WIDTH = np.dtype("<u4")


class VectorList(_Float32Type):
    """Several float32 vectors of one width, as a 2-D array (one vector per row).

    Postgres: ``vector[]``, so that SQL can score each one. Elsewhere: the width
    as a little-endian uint32, then the float32 values.
    """

    many = True
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
