"""memstore: durable, SQL-backed memory for AI agents."""

from memstore.agent import AccessStat, ApproxTokenCounter, Context, ContextItem, TokenCounter
from memstore.consolidation.errors import ExtractionError, LLMEndpointError, LLMResponseError
from memstore.consolidation.types import ConsolidationResult
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
from memstore.gc import GcReport
from memstore.repositories.facts import AssertOutcome, FactChange
from memstore.scopes import ScopeContext, ScopeLevel, TaskState
from memstore.slots import RemovedThread, Slot, SlotMetadata, ThreadInfo
from memstore.store import FROM_DUMP, MemoryStore
from memstore.sync import SyncMemoryStore
from memstore.threads import ThreadBuffer
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
from memstore.working_memory import WorkingMemory

__all__ = [
    "FROM_DUMP",
    "AccessStat",
    "ApproxTokenCounter",
    "AssertOutcome",
    "BlockVersion",
    "Conflict",
    "ConsolidationResult",
    "Context",
    "ContextItem",
    "DimensionMismatch",
    "Episode",
    "EpisodeMatch",
    "ExtractionError",
    "Fact",
    "FactChange",
    "GcReport",
    "InvalidInput",
    "LLMEndpointError",
    "LLMResponseError",
    "LimitExceeded",
    "MemoryBlock",
    "MemoryStore",
    "MemstoreError",
    "Message",
    "NotFound",
    "PermissionDenied",
    "Profile",
    "RemovedThread",
    "Role",
    "SchemaOutOfDate",
    "ScopeContext",
    "ScopeLevel",
    "Slot",
    "SlotMetadata",
    "SyncMemoryStore",
    "TaskState",
    "ThreadBuffer",
    "ThreadInfo",
    "TokenCounter",
    "Unavailable",
    "WorkingMemory",
]
