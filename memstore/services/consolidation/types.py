"""Value objects of consolidation and the Extractor protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from memstore.types import Episode

__all__ = ["BatchResult", "CandidateFact", "ConsolidationResult", "Extractor"]


@dataclass(frozen=True, kw_only=True)
class CandidateFact:
    """A statement an extractor read in one episode, before reconciliation.

    ``subject`` is already resolved (first person becomes the episode's user);
    ``valid_from`` is normally the episode's ``occurred_at``.
    """

    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: datetime
    episode_id: str
    valid_to: datetime | None = None


@runtime_checkable
class Extractor(Protocol):
    """Turns a batch of one tenant's episodes into candidate facts.

    Must not write anything; raising :class:`ExtractionError` abandons the
    batch (it stays unconsolidated).
    """

    name: str

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]: ...


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
