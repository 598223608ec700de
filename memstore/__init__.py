"""memstore: durable, SQL-backed memory for AI agents."""

from memstore.agent import AccessStat, ApproxTokenCounter, Context, ContextItem, TokenCounter
from memstore.errors import (
    Conflict,
    DimensionMismatch,
    InvalidInput,
    LimitExceeded,
    MemstoreError,
    NotFound,
    SchemaOutOfDate,
    Unavailable,
)
from memstore.repositories.facts import AssertOutcome, FactChange
from memstore.store import MemoryStore
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
    "AccessStat",
    "ApproxTokenCounter",
    "AssertOutcome",
    "BlockVersion",
    "Conflict",
    "Context",
    "ContextItem",
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
    "Profile",
    "Role",
    "SchemaOutOfDate",
    "TokenCounter",
    "Unavailable",
]
