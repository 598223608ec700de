"""What an extractor returns, and the Extractor protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from memstore.types import Episode

__all__ = ["CandidateFact", "Extractor"]


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
