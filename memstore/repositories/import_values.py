"""An exported value's JSON form back to what its column stores, checked by the column's type.

Datetimes, integers (within the narrowest backend's width), floats, booleans,
strings, base64 bytes, JSON documents and vectors; anything else raises
:class:`InvalidInput`, which the import names with its table, row and column.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
)
from sqlalchemy.types import TypeDecorator

from memstore.core.validation import (
    check_aware,
    check_json,
    check_storable,
    check_vector,
    is_number,
)
from memstore.db.types import UTCDateTime, Vector, VectorList
from memstore.errors import InvalidInput

__all__ = ["aware_text", "typed_value"]


def aware_text(field: str, value: Any) -> datetime:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be an ISO 8601 string, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInput(f"{field} is not an ISO 8601 datetime: {value!r}") from exc
    return check_aware(field, parsed)


# Integer columns hold what the narrowest backend holds (Postgres: int2/int4/int8);
# a bigger number would reach the driver and fail there (or overflow SQLite's int64).
_INT_BITS = ((BigInteger, 64), (SmallInteger, 16), (Integer, 32))


def _integer_bits(kind: Any) -> int:
    return next(bits for base, bits in _INT_BITS if isinstance(kind, base))


def _base_type(column: Column[Any]) -> Any:
    kind = column.type
    if isinstance(kind, UTCDateTime | Vector | VectorList):
        return kind
    while isinstance(kind, TypeDecorator):
        kind = kind.impl_instance
    return kind


def _typed_vector(value: Any, field: str, dim: int | None) -> list[float]:
    if not isinstance(value, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        raise InvalidInput("must be a list of numbers")
    return check_vector(field, value, dim)


def typed_value(column: Column[Any], value: Any, dim: int | None) -> Any:
    """``value`` (JSON form) as the column stores it; InvalidInput if it cannot be."""
    kind = _base_type(column)
    if isinstance(kind, UTCDateTime):
        return aware_text("value", value)
    if isinstance(kind, VectorList):
        if not isinstance(value, list) or not value:
            raise InvalidInput("must be a non-empty list of vectors")
        return [_typed_vector(v, "passages", dim) for v in value]
    if isinstance(kind, Vector):
        return _typed_vector(value, "embedding", dim)
    if isinstance(kind, Boolean):
        if not isinstance(value, bool):
            raise InvalidInput(f"must be true or false, got {type(value).__name__}")
        return value
    if isinstance(kind, Integer):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(f"must be an integer, got {type(value).__name__}")
        bits = _integer_bits(kind)
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise InvalidInput(f"is out of range for a {bits}-bit integer column")
        return value
    if isinstance(kind, Float):
        if not is_number(value):
            raise InvalidInput(f"must be a finite number, got {value!r}")
        return float(value)
    if isinstance(kind, String | Text):
        if not isinstance(value, str):
            raise InvalidInput(f"must be a string, got {type(value).__name__}")
        check_storable("value", value)
        length = getattr(kind, "length", None)
        if length and len(value) > length:
            raise InvalidInput(f"is longer than {length} characters")
        return value
    if isinstance(kind, LargeBinary):
        if not isinstance(value, str):
            raise InvalidInput("must be base64 text")
        try:
            return base64.b64decode(value, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise InvalidInput(f"is not base64: {exc}") from exc
    return check_json("value", value)  # JSON documents
