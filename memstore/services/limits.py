"""Limits and markers shared by the services and the facade."""

from __future__ import annotations

import enum

from memstore.errors import InvalidInput

__all__ = [
    "ACCESS_KINDS",
    "DEFAULT_BLOCK_CHAR_LIMIT",
    "DEFAULT_CHANGE_RETENTION_SECONDS",
    "EXPORT_FORMAT",
    "FROM_DUMP",
    "IMPORT_BATCH",
    "MAX_BATCH",
    "MAX_DURATION_SECONDS",
    "MAX_EPISODE_ID_CHARS",
    "FromDump",
    "check_positive_seconds",
]

EXPORT_FORMAT = "memstore-export/1"
DEFAULT_BLOCK_CHAR_LIMIT = 5_000
# How long gc keeps change-log rows (store.changes() resumes within it).
DEFAULT_CHANGE_RETENTION_SECONDS = 7 * 86_400.0
MAX_BATCH = 10_000
MAX_EPISODE_ID_CHARS = 36
ACCESS_KINDS = frozenset({"episode", "fact", "block"})
# Rows per import transaction chunk.
IMPORT_BATCH = 500
# TTLs are added to / subtracted from the clock; a longer one would overflow
# datetime arithmetic (and means "never" anyway), so it is refused up front.
MAX_DURATION_SECONDS = 1_000 * 365 * 86_400


def check_positive_seconds(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number of seconds")
    # Compared before float(): an int too large for a float must not raise OverflowError.
    if not (0 < value <= MAX_DURATION_SECONDS):
        raise InvalidInput(
            f"{field} must be a positive number of seconds, at most {MAX_DURATION_SECONDS}"
        )
    return float(value)


class FromDump(enum.Enum):
    FROM_DUMP = "from-dump"


# Default of import_(user_id=...): the tenant recorded in the dump (None: the anonymous tenant).
FROM_DUMP = FromDump.FROM_DUMP
