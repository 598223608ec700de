"""Long-term memory as callers see it: episodes, facts, blocks and what recall returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memstore.types.defaults import new_id, utcnow

__all__ = [
    "AccessStat",
    "AssertOutcome",
    "BlockText",
    "BlockVersion",
    "Episode",
    "EpisodeMatch",
    "Fact",
    "FactChange",
    "FactMatch",
    "MemoryBlock",
    "Message",
    "Profile",
    "Role",
]


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
class BlockText:
    """A block's text at one version: what a block and each of its past versions hold."""

    name: str
    content: str
    version: int


@dataclass(frozen=True, kw_only=True)
class MemoryBlock(BlockText):
    pinned_order: int
    updated_at: datetime
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class BlockVersion(BlockText):
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
