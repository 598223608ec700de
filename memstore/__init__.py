"""memstore: durable, SQL-backed memory for AI agents."""

from memstore.consolidation.errors import ExtractionError, LLMEndpointError, LLMResponseError
from memstore.consolidation.types import ConsolidationResult
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
    "AssertOutcome",
    "BlockVersion",
    "Conflict",
    "ConsolidationResult",
    "DimensionMismatch",
    "Episode",
    "EpisodeMatch",
    "ExtractionError",
    "Fact",
    "FactChange",
    "InvalidInput",
    "LLMEndpointError",
    "LLMResponseError",
    "LimitExceeded",
    "MemoryBlock",
    "MemoryStore",
    "MemstoreError",
    "Message",
    "NotFound",
    "Profile",
    "Role",
    "SchemaOutOfDate",
    "Unavailable",
]
