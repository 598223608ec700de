"""Public value objects, in one module at the bottom of the layers.

Plain data: they import only the standard library, and checks of caller input
live with the code that takes it (``core/validation.py``, ``core/scopes.py``).
Most are immutable so a caller cannot mistake them for live rows.
:class:`~memstore.services.agent.context.Context` stays with the packer that
renders it: its rendering is the packer's budget rule, not plain data.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

__all__ = [
    "AccessStat",
    "AssertOutcome",
    "BatchResult",
    "BlockVersion",
    "Change",
    "ChangeKind",
    "ConsolidationResult",
    "Episode",
    "EpisodeMatch",
    "Fact",
    "FactChange",
    "FactMatch",
    "GcReport",
    "MemoryBlock",
    "Message",
    "Profile",
    "RemovedThread",
    "Role",
    "ScopeContext",
    "ScopeLevel",
    "Slot",
    "SlotMetadata",
    "TaskState",
    "ThreadInfo",
    "new_id",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, kw_only=True)
class Episode:
    """One agent turn."""

    session_id: str
    input: str = ""
    output: str = ""
    user_id: str | None = None
    tool_calls: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=new_id)


@dataclass(frozen=True, kw_only=True)
class Fact:
    """A (subject, predicate, object) statement with two time axes.

    As input to ``add_fact`` only the statement, ``confidence``, ``sources`` and
    valid time matter; ``single_valued=None`` defers to the predicate registry.
    Read back, every field describes one stored version.
    """

    subject: str
    predicate: str
    object: str
    user_id: str | None = None
    confidence: float = 1.0
    sources: tuple[str, ...] = ()
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    single_valued: bool | None = None
    id: str | None = None
    fact_id: str | None = None
    recorded_at: datetime | None = None
    superseded_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class MemoryBlock:
    name: str
    content: str
    pinned_order: int
    version: int
    updated_at: datetime
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class BlockVersion:
    name: str
    version: int
    content: str
    created_at: datetime


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, kw_only=True)
class Message:
    role: Role
    content: str
    episode_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class EpisodeMatch:
    """A recalled episode, how relevant it is to the query, and its ranking's parts.

    ``score`` is the row's relevance to the query, from 0 (nothing relates it)
    to 1, depending on the query and this row only; it is the number
    ``min_score`` is compared with, and the same scale as :class:`FactMatch`'s.
    Matches come in ranking order (``parts["ranking"]``, which also weighs
    neighbouring turns, the session and recency), so a row may follow one of
    lower ``score``. With a reranker, the order is ``parts["rerank"]``'s, the
    reranker's own score. See docs/RECALL.md, "Scores and the relevance floor".
    """

    episode: Episode
    score: float
    parts: dict[str, float]


@dataclass(frozen=True, kw_only=True)
class FactMatch:
    """A recalled fact: ``score`` is its relevance (0..1), as in :class:`EpisodeMatch`."""

    fact: Fact
    score: float
    parts: dict[str, float]


@dataclass(frozen=True, kw_only=True)
class Profile:
    user_id: str | None
    episode_count: int
    fact_count: int
    block_count: int
    last_seen: datetime | None
    recent_sessions: list[str]
    sample_facts: list[Fact]


class FactChange(StrEnum):
    """What asserting a statement did to the stored facts."""

    ADDED = "added"
    REINFORCED = "reinforced"
    SUPERSEDED = "superseded"
    UNCHANGED = "unchanged"


class ChangeKind(StrEnum):
    """What a :class:`Change` of ``store.changes()`` reports."""

    BLOCK_UPDATED = "block_updated"  # update_block / append_block; key: the block name
    BLOCK_DELETED = "block_deleted"  # delete_block; key: the block name
    FACT_ASSERTED = "fact_asserted"  # a new fact row; key: its id
    FACT_SUPERSEDED = "fact_superseded"  # a fact replaced by a newer one; key: the old id
    FACT_RETRACTED = "fact_retracted"  # retract_fact; key: the fact id
    THREAD_APPENDED = "thread_appended"  # a slot appended; key: the thread id
    THREAD_DELETED = "thread_deleted"  # delete_thread or gc; key: the thread id
    # Not stored: reported to an iterator whose position belongs to a tenant that
    # was forgotten since (``forget`` leaves nothing, the log included); key: None.
    FORGET = "forget"
    # Not stored: gc's retention dropped changes after the caller's position;
    # re-read whatever state you track. key: None.
    CHANGES_PRUNED = "changes_pruned"
    # Not stored: the caller's position is past the end of the tenant's log, so
    # the log cannot have served it (the database was restored from an older
    # copy, or the position is not one this store yielded); what the caller
    # knew may not exist. Re-read whatever state you track. key: None.
    CHANGES_RESET = "changes_reset"


@dataclass(frozen=True, kw_only=True)
class Change:
    """One committed change of a tenant's memory, as ``store.changes()`` yields it.

    ``position`` is opaque: store it and pass it back as ``after=`` to resume
    (at-least-once, see docs/threads.md). ``slot_index`` is the appended slot's
    index for ``THREAD_APPENDED`` (else None).
    """

    kind: ChangeKind
    key: str | None
    at: datetime
    position: str
    user_id: str | None = None
    slot_index: int | None = None


@dataclass(frozen=True)
class AssertOutcome:
    change: FactChange
    fact_id: str


@dataclass(frozen=True)
class AccessStat:
    """How often an item was recalled or loaded, and when last."""

    kind: str
    item_id: str
    access_count: int
    last_accessed_at: datetime


# -- working memory: the scope hierarchy and task state


class ScopeLevel(StrEnum):
    """Working-memory scopes, outermost first: project > agent instance > session."""

    PROJECT = "project"
    AGENT_INSTANCE = "agent_instance"
    SESSION = "session"


@dataclass(frozen=True)
class ScopeContext:
    """One scope and its parents; keys are isolated per full path (and per tenant)."""

    scope_type: ScopeLevel
    scope_id: str
    parent: ScopeContext | None = None

    @classmethod
    def build(
        cls,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> ScopeContext | None:
        """The innermost scope of the given levels (None if no level is given)."""
        scope: ScopeContext | None = None
        for level, scope_id in zip(ScopeLevel, (project_id, agent_id, session_id), strict=True):
            if scope_id is not None:
                scope = cls(scope_type=level, scope_id=scope_id, parent=scope)
        return scope

    def path(self) -> list[ScopeContext]:
        """Outermost scope first, ending with this one."""
        chain: list[ScopeContext] = []
        node: ScopeContext | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        return chain[::-1]

    def level_id(self, level: ScopeLevel) -> str | None:
        return next((s.scope_id for s in self.path() if s.scope_type is level), None)

    def to_key_prefix(self) -> str:
        """A readable name of the path, e.g. ``project:p1/session:s1`` (display only)."""
        return "/".join(f"{s.scope_type.value}:{s.scope_id}" for s in self.path())


@dataclass(frozen=True, kw_only=True)
class TaskState:
    """What the agent is doing in this scope; ``progress_percent`` lies in 0..100."""

    task_id: str
    task_type: str = ""
    description: str = ""
    status: str = "pending"
    current_step: int = 0
    total_steps: int = 0
    progress_percent: float = 0.0
    context: dict[str, Any] = field(default_factory=dict)
    started_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)


# -- the thread context buffer: immutable slots and what GC removed


@dataclass(frozen=True, kw_only=True)
class SlotMetadata:
    """Everything about a slot except its payload; fixed once appended."""

    thread_id: str
    from_id: str
    to_id: str
    slot_index: int
    timestamp: datetime
    payload_type: str
    own_name: str | None = None
    is_self_call: bool = False
    usage_instructions: str = ""
    todo_nudge: str = ""
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Slot:
    """One message of a thread, as stored.

    Frozen, and every read builds a fresh copy from the database, so a handler
    that mutates its ``payload`` (a plain JSON value) changes nobody else's view.
    """

    payload: Any
    metadata: SlotMetadata

    @property
    def thread_id(self) -> str:
        return self.metadata.thread_id

    @property
    def from_id(self) -> str:
        return self.metadata.from_id

    @property
    def to_id(self) -> str:
        return self.metadata.to_id

    @property
    def index(self) -> int:
        return self.metadata.slot_index

    @property
    def slot_index(self) -> int:
        return self.metadata.slot_index

    @property
    def payload_type(self) -> str:
        return self.metadata.payload_type

    @property
    def timestamp(self) -> datetime:
        return self.metadata.timestamp


@dataclass(frozen=True, kw_only=True)
class ThreadInfo:
    """A thread's header: how many slots it holds and when it was created / last appended to."""

    thread_id: str
    slot_count: int
    created_at: datetime
    last_activity_at: datetime
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class RemovedThread:
    """A thread garbage collection deleted, and why (``"idle"`` or ``"max_threads"``)."""

    thread_id: str
    slot_count: int
    reason: str
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class GcReport:
    """What one garbage collection removed."""

    threads: tuple[RemovedThread, ...]
    expired_keys: int
    # Change-log rows older than the store's change_retention_seconds.
    pruned_changes: int = 0

    @property
    def slots(self) -> int:
        return sum(t.slot_count for t in self.threads)


# -- consolidation


@dataclass(frozen=True, kw_only=True)
class BatchResult:
    """What one committed batch did."""

    user_id: str | None
    processed: int
    added: int = 0
    reinforced: int = 0
    superseded: int = 0
    unchanged: int = 0


@dataclass(kw_only=True)
class ConsolidationResult:
    """Totals of a consolidation run; ``duration`` in seconds."""

    processed: int = 0
    added: int = 0
    reinforced: int = 0
    superseded: int = 0
    unchanged: int = 0
    batches: int = 0
    duration: float = 0.0
    users: set[str | None] = field(default_factory=set)

    def include(self, batch: BatchResult) -> None:
        self.processed += batch.processed
        self.added += batch.added
        self.reinforced += batch.reinforced
        self.superseded += batch.superseded
        self.unchanged += batch.unchanged
        self.batches += 1
        self.users.add(batch.user_id)

    @property
    def rate(self) -> float:
        """Episodes per second (0 when nothing ran)."""
        return self.processed / self.duration if self.duration > 0 else 0.0

    def summary(self) -> str:
        return (
            f"consolidated {self.processed} episodes in {self.batches} batches "
            f"({len(self.users)} users): {self.added} added, {self.reinforced} reinforced, "
            f"{self.superseded} superseded, {self.unchanged} unchanged "
            f"in {self.duration:.2f}s ({self.rate:.1f} episodes/s)"
        )
