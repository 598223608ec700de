"""memstore: durable, SQL-backed memory for AI agents."""

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
from memstore.gc import GcReport
from memstore.repositories.facts import AssertOutcome, FactChange
from memstore.scopes import ScopeContext, ScopeLevel, TaskState
from memstore.slots import RemovedThread, Slot, SlotMetadata, ThreadInfo
from memstore.store import MemoryStore
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
    "AssertOutcome",
    "BlockVersion",
    "Conflict",
    "DimensionMismatch",
    "Episode",
    "EpisodeMatch",
    "Fact",
    "FactChange",
    "GcReport",
    "InvalidInput",
    "LimitExceeded",
    "MemoryBlock",
    "MemoryStore",
    "MemstoreError",
    "Message",
    "NotFound",
    "Profile",
    "RemovedThread",
    "Role",
    "SchemaOutOfDate",
    "ScopeContext",
    "ScopeLevel",
    "Slot",
    "SlotMetadata",
    "TaskState",
    "ThreadBuffer",
    "ThreadInfo",
    "Unavailable",
    "WorkingMemory",
]
