"""Limits and markers shared by the services and the facade."""

from __future__ import annotations

import enum

__all__ = [
    "ACCESS_KINDS",
    "DEFAULT_BLOCK_CHAR_LIMIT",
    "EXPORT_FORMAT",
    "FROM_DUMP",
    "IMPORT_BATCH",
    "MAX_BATCH",
    "MAX_EPISODE_ID_CHARS",
    "FromDump",
]

EXPORT_FORMAT = "memstore-export/1"
DEFAULT_BLOCK_CHAR_LIMIT = 5_000
MAX_BATCH = 10_000
MAX_EPISODE_ID_CHARS = 36
ACCESS_KINDS = frozenset({"episode", "fact", "block"})
# Rows per import transaction chunk.
IMPORT_BATCH = 500


class FromDump(enum.Enum):
    FROM_DUMP = "from-dump"


# Default of import_(user_id=...): the tenant recorded in the dump (None is anonymous).
FROM_DUMP = FromDump.FROM_DUMP
