"""memstore: durable, SQL-backed memory for AI agents."""

import logging

from memstore.core.model_spec import ModelSpec
from memstore.core.tenancy import ANONYMOUS
from memstore.errors import (
    ConfigurationError,
    Conflict,
    DatabaseError,
    DimensionMismatch,
    EmbedderError,
    EmbedderFormsDropped,
    EmbedderMismatch,
    EmbedderUnavailable,
    InvalidImportRow,
    InvalidInput,
    LimitExceeded,
    MemstoreError,
    NotFound,
    PermissionDenied,
    SchemaOutOfDate,
    TenantRequired,
    Unavailable,
    Unsupported,
    WrongThread,
)
from memstore.services.agent import (
    ApproxTokenCounter,
    Context,
    ContextItem,
    TokenCounter,
)
from memstore.services.consolidation.errors import (
    ExtractionError,
    LLMEndpointError,
    LLMResponseError,
)
from memstore.services.threads import ThreadBuffer
from memstore.services.working_memory import WorkingMemory
from memstore.store import FROM_DUMP, MemoryStore
from memstore.sync import SyncMemoryStore
from memstore.tenant import TenantMemory, TenantThreads
from memstore.types import (
    AccessStat,
    AssertOutcome,
    BlockVersion,
    Change,
    ChangeKind,
    ConsolidationResult,
    Episode,
    EpisodeMatch,
    Fact,
    FactChange,
    FactMatch,
    GcReport,
    MemoryBlock,
    Message,
    Profile,
    RemovedThread,
    Role,
    ScopeContext,
    ScopeLevel,
    Slot,
    SlotMetadata,
    TaskState,
    ThreadInfo,
)
from memstore.version import __version__

# A library configures no handlers; the application decides where records go
# (records of the "memstore" logger tree are dropped unless it does).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ANONYMOUS",
    "FROM_DUMP",
    "AccessStat",
    "ApproxTokenCounter",
    "AssertOutcome",
    "BlockVersion",
    "Change",
    "ChangeKind",
    "ConfigurationError",
    "Conflict",
    "ConsolidationResult",
    "Context",
    "ContextItem",
    "DatabaseError",
    "DimensionMismatch",
    "EmbedderError",
    "EmbedderFormsDropped",
    "EmbedderMismatch",
    "EmbedderUnavailable",
    "Episode",
    "EpisodeMatch",
    "ExtractionError",
    "Fact",
    "FactChange",
    "FactMatch",
    "GcReport",
    "InvalidImportRow",
    "InvalidInput",
    "LLMEndpointError",
    "LLMResponseError",
    "LimitExceeded",
    "MemoryBlock",
    "MemoryStore",
    "MemstoreError",
    "Message",
    "ModelSpec",
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
    "TenantMemory",
    "TenantRequired",
    "TenantThreads",
    "ThreadBuffer",
    "ThreadInfo",
    "TokenCounter",
    "Unavailable",
    "Unsupported",
    "WorkingMemory",
    "WrongThread",
    "__version__",
]
