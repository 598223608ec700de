"""What consolidation reports: one batch, and the totals of a run."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "BatchResult",
    "ConsolidationResult",
]


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
