"""memstore: durable, SQL-backed memory for AI agents."""

from memstore.errors import (
    Conflict,
    DimensionMismatch,
    InvalidInput,
    LimitExceeded,
    MemstoreError,
    NotFound,
    PermissionDenied,
    SchemaOutOfDate,
    Unavailable,
)
from memstore.repositories.facts import AssertOutcome, FactChange
from memstore.store import FROM_DUMP, MemoryStore
from memstore.types import (
    BlockVersion,
    Episode,
    EpisodeMatch,
    Fact,
    MemoryBlock,
    Message,
    Profile,
    Role,
)

__all__ = [
    "FROM_DUMP",
    "AssertOutcome",
    "BlockVersion",
    "Conflict",
    "DimensionMismatch",
    "Episode",
    "EpisodeMatch",
    "Fact",
    "FactChange",
    "InvalidInput",
    "LimitExceeded",
    "MemoryBlock",
    "MemoryStore",
    "MemstoreError",
    "Message",
    "NotFound",
    "PermissionDenied",
    "Profile",
    "Role",
    "SchemaOutOfDate",
    "Unavailable",
]
