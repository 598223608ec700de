"""The default factories of the value types: the time now (aware, UTC) and a new id."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

__all__ = [
    "new_id",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())
