"""The rules of a LangGraph store item, shared by its writers: ``MemstoreStore``,
``import_`` and ``reembed`` (memstore.integrations.langgraph has the store itself).

An item's vectors are the float32 unit vectors of the texts found at its indexed
fields (JSON paths, ``"$"`` for the whole value), concatenated. The fields are stored
with the item (``langgraph_items.index_fields``) so that ``reembed`` and an import
from another embedder can compute the same texts again with a new embedder.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memstore.core.validation import is_number
from memstore.errors import ConfigurationError, InvalidInput

__all__ = [
    "MAX_KEY_BYTES",
    "MAX_TTL_MINUTES",
    "SEPARATOR",
    "check_index_fields",
    "check_key",
    "check_labels",
    "check_namespace_length",
    "check_stored_namespace",
    "check_ttl",
    "check_vectors",
    "indexed_texts",
]

# LangGraph forbids "." inside a namespace label, so joining labels on it is reversible.
SEPARATOR = "."
# Namespace and key each; with a 255-character user_id the primary-key entry stays
# under Postgres' btree limit (~2700 bytes), which would otherwise refuse the row.
MAX_KEY_BYTES = 768
MAX_TTL_MINUTES = 1_000 * 365 * 24 * 60
_FLOAT32 = np.dtype("<f4")


def check_labels(what: str, labels: object, *, wildcard: bool = False) -> tuple[str, ...]:
    """A namespace (or path) as a tuple of labels: non-empty strings without '.' or NUL."""
    if not isinstance(labels, tuple | list):
        raise InvalidInput(f"{what} must be a tuple of strings")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise InvalidInput(f"{what}: every label must be a non-empty string, got {label!r}")
        if SEPARATOR in label or "\x00" in label:
            raise InvalidInput(f"{what}: label {label!r} may not contain '.' or NUL")
        if label == "*" and not wildcard:
            raise InvalidInput(f"{what}: '*' is only a wildcard in list_namespaces")
    return tuple(labels)


def check_namespace_length(rest: tuple[str, ...]) -> tuple[str, ...]:
    if _utf8(SEPARATOR.join(rest)) > MAX_KEY_BYTES:
        raise InvalidInput(
            f"namespace too long: its labels joined by '.' exceed {MAX_KEY_BYTES} UTF-8 bytes"
        )
    return rest


def check_stored_namespace(namespace: str) -> str:
    """A namespace as stored (labels below the tenant joined by '.'; "" is the root)."""
    if namespace:
        check_namespace_length(check_labels("namespace", tuple(namespace.split(SEPARATOR))))
    return namespace


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key or "\x00" in key or _utf8(key) > MAX_KEY_BYTES:
        raise InvalidInput(f"key must be a non-empty string of at most {MAX_KEY_BYTES} UTF-8 bytes")
    return key


def check_ttl(ttl: object) -> float | None:
    """A TTL in minutes: None (never expires) or a positive number up to 1,000 years."""
    if ttl is None:
        return None
    if not is_number(ttl) or not (0 < ttl <= MAX_TTL_MINUTES):
        raise InvalidInput(f"ttl must be a positive number of minutes, got {ttl!r}")
    return float(ttl)


def check_index_fields(fields: object) -> list[str]:
    if not isinstance(fields, list) or not fields:
        raise InvalidInput("index fields must be a non-empty list of JSON paths like ['text']")
    for field in fields:
        if not isinstance(field, str) or not field:
            raise InvalidInput(f"an index field must be a non-empty JSON path, got {field!r}")
    return fields


def check_vectors(blob: object, dim: int | None) -> bytes:
    """An item's vectors: one or more finite float32 vectors of the store's width."""
    if not isinstance(blob, bytes) or not blob:
        raise InvalidInput("vectors must be the bytes of one or more float32 vectors")
    width = _FLOAT32.itemsize * (dim or 1)
    if len(blob) % width:
        raise InvalidInput(
            f"vectors hold {len(blob)} bytes, not a whole number of "
            + (f"{dim}-dimensional float32 vectors" if dim else "float32 values")
        )
    if not np.isfinite(np.frombuffer(blob, dtype=_FLOAT32)).all():
        raise InvalidInput("vectors contain NaN or infinite values")
    return blob


def indexed_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts an item is embedded from: what each field's path finds in ``value``.

    Paths are LangGraph's (``"a.b"``, ``"a[*].b"``, ``"$"`` for the whole value), read
    by LangGraph's own path reader so that every writer finds the same texts; values
    that are not strings are embedded as their JSON text. Empty texts are skipped.
    """
    try:
        from langgraph.store.base import get_text_at_path, tokenize_path
    except ImportError as exc:  # an item with fields was written with the extra installed
        raise ConfigurationError(
            "LangGraph store items are embedded by their indexed fields, which needs "
            "the langgraph extra: pip install 'memstore[langgraph]'"
        ) from exc
    texts: list[str] = []
    for path in fields:
        found = value if path == "$" else get_text_at_path(value, tokenize_path(path))
        for text in found if isinstance(found, list) and path != "$" else [found]:
            text = text if isinstance(text, str) else json.dumps(text, sort_keys=True)
            if text:
                texts.append(text)
    return texts


def _utf8(text: str) -> int:
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:  # lone surrogates cannot be stored
        raise InvalidInput(f"not valid Unicode text: {exc}") from exc
