"""What the agent layer needs of a memory store: the public API, as a protocol.

The agent helpers (context packing, prefetch, memory tools) are written against
this protocol rather than the ``MemoryStore`` facade, so the facade can compose
them without an import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from memstore.types import (
    AccessStat,
    AssertOutcome,
    Episode,
    EpisodeMatch,
    Fact,
    FactMatch,
    MemoryBlock,
    Message,
    Profile,
)

__all__ = ["AgentMemory"]


class AgentMemory(Protocol):
    def now(self) -> datetime: ...

    def reads_unrecorded(self) -> AbstractContextManager[None]: ...

    async def working(self, *, user_id: str | None = None) -> list[MemoryBlock]: ...

    async def recall_facts(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        min_score: float | None = None,
    ) -> list[Fact]: ...

    async def recall_facts_scored(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        min_score: float | None = None,
    ) -> list[FactMatch]: ...

    async def recall_scored(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        recency_weight: float = 0.0,
        min_score: float | None = None,
    ) -> list[EpisodeMatch]: ...

    async def session_messages(
        self, session_id: str, *, user_id: str | None = None, limit: int = 20
    ) -> list[Message]: ...

    async def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode: ...

    async def profile(self, *, user_id: str | None = None) -> Profile: ...

    async def fact_history(
        self,
        *,
        user_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        fact_id: str | None = None,
    ) -> list[Fact]: ...

    async def assert_fact(self, fact: Fact) -> AssertOutcome: ...

    def record_access(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> None: ...

    async def access_counts(
        self, kind: str, item_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, int]: ...

    async def access_stats(
        self, *, user_id: str | None = None, kind: str | None = None, limit: int = 20
    ) -> list[AccessStat]: ...
