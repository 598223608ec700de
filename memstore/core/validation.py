"""Input checks shared by every write path: bad input raises InvalidInput before any SQL."""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeGuard

from memstore.errors import InvalidInput

__all__ = [
    "MAX_IDENTIFIER_CHARS",
    "MAX_INDEX_KEY_BYTES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_TEXT_CHARS",
    "check_aware",
    "check_identifier",
    "check_index_key_bytes",
    "check_json",
    "check_limit",
    "check_number_between",
    "check_storable",
    "check_text",
    "check_time_range",
    "check_vector",
    "is_number",
]

MAX_IDENTIFIER_CHARS = 255
MAX_TEXT_CHARS = 100_000
MAX_JSON_BYTES = 1_000_000
# Postgres b-tree entries hold at most 2,704 bytes (8 kB pages). Identifiers that
# share one index entry (e.g. a working-memory key: tenant, project, agent,
# session, key) may together use this many UTF-8 bytes, which leaves room for the
# entry's headers and padding; SQLite enforces the same rule so both backends
# accept exactly the same data.
MAX_INDEX_KEY_BYTES = 2_560
# Nesting of lists/objects in a JSON payload; deeper documents are refused
# before they can exhaust the recursion limit of an encoder or decoder.
MAX_JSON_DEPTH = 100


def _has_nul(value: str) -> bool:
    # PostgreSQL text and jsonb cannot hold U+0000; refusing it everywhere keeps
    # SQLite and Postgres stores interchangeable.
    return "\x00" in value


def _has_surrogate(value: str) -> bool:
    # Lone surrogates (U+D800-U+DFFF) are not characters: they cannot be encoded
    # as UTF-8, so no database can store them.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _unstorable(field: str, value: str) -> None:
    if _has_nul(value):
        raise InvalidInput(f"{field} must not contain NUL characters")
    if _has_surrogate(value):
        raise InvalidInput(f"{field} must not contain unpaired surrogate code points")


def _string(field: str, value: object, *, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{field} must not be empty")
    return value


def check_identifier(field: str, value: object, *, max_chars: int = MAX_IDENTIFIER_CHARS) -> str:
    value = _string(field, value, allow_empty=False)
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is longer than {max_chars} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise InvalidInput(f"{field} must not contain control characters")
    _unstorable(field, value)
    return value


def check_index_key_bytes(what: str, parts: Sequence[str], *, reserve: int = 0) -> None:
    """Refuse identifiers that together would not fit one index entry on Postgres."""
    used = sum(len(p.encode("utf-8")) for p in parts) + reserve
    if used > MAX_INDEX_KEY_BYTES:
        from memstore.errors import LimitExceeded

        raise LimitExceeded(
            f"{what} use {used} bytes in UTF-8 together; the limit is {MAX_INDEX_KEY_BYTES} "
            "(a database index entry must hold them): use shorter ids"
        )


def check_text(
    field: str, value: object, *, allow_empty: bool = False, max_chars: int = MAX_TEXT_CHARS
) -> str:
    value = _string(field, value, allow_empty=allow_empty)
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is {len(value)} characters; the limit is {max_chars}")
    _unstorable(field, value)
    return value


def is_number(value: object) -> TypeGuard[int | float]:
    """A finite int or float; a bool is not a number here (``True`` is no weight or score).

    An int too large for a float is not one either: every such field is compared
    with and stored as a float, where it would overflow.
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_number_between(field: str, value: object, low: float, high: float) -> float:
    """A number (not a bool) in ``low..high``."""
    if not is_number(value) or not low <= value <= high:
        raise InvalidInput(f"{field} must be a number between {low:g} and {high:g}")
    return value


def check_aware(field: str, value: object) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} is a naive datetime; pass a timezone-aware one")
    try:
        # Stored in UTC: a time near year 1 or 9999 may have no UTC equivalent.
        value.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidInput(f"{field} is out of range once converted to UTC") from exc
    return value


def check_time_range(value: object) -> tuple[datetime, datetime]:
    """A ``(start, end)`` pair of aware datetimes with ``start <= end`` (inclusive)."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        got = f"{len(value)} items" if isinstance(value, tuple | list) else type(value).__name__
        raise InvalidInput(f"time_range must be a (start, end) pair of datetimes, got {got}")
    start = check_aware("time_range[0]", value[0])
    end = check_aware("time_range[1]", value[1])
    if start > end:
        raise InvalidInput(
            f"time_range starts ({start.isoformat()}) after it ends ({end.isoformat()}); "
            "pass (start, end) with start <= end"
        )
    return start, end


def check_json(field: str, value: Any) -> Any:
    """Return ``value`` unchanged if it round-trips through strict JSON."""
    check_storable(field, value)
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{field} is not JSON-serialisable: {exc}") from exc
    if len(encoded.encode()) > MAX_JSON_BYTES:
        raise InvalidInput(f"{field} is larger than {MAX_JSON_BYTES} bytes as JSON")
    if json.loads(encoded) != value:
        # e.g. tuples, int dict keys or non-string keys would silently change shape.
        raise InvalidInput(f"{field} does not round-trip through JSON unchanged")
    return value


def check_storable(field: str, value: Any) -> None:
    """Every string in ``value`` (a scalar or JSON document, keys included) can be
    stored by both backends, and documents respect the depth cap. No recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _unstorable(field, item)
            continue
        if isinstance(item, dict):
            children: list[Any] = [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            children = list(item)
        else:
            continue
        if depth + 1 > MAX_JSON_DEPTH:
            raise InvalidInput(f"{field} is nested deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def check_limit(field: str, value: object, *, maximum: int = 10_000) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer")
    if not 1 <= value <= maximum:
        raise InvalidInput(f"{field} must be between 1 and {maximum}")
    return value


def check_vector(field: str, value: Sequence[float], dim: int | None = None) -> list[float]:
    out = [float(x) for x in value]
    if dim is not None and len(out) != dim:
        from memstore.errors import DimensionMismatch

        raise DimensionMismatch(f"{field} has dimension {len(out)}; the store uses {dim}")
    if not all(math.isfinite(x) for x in out):
        raise InvalidInput(f"{field} contains NaN or infinite values")
    return out
