"""An evaluation set: conversations of turns, and questions naming their evidence turns.

Every format (:mod:`memstore.evaluation.formats`) reads into a :class:`Dataset`; the
runner stores each conversation as one tenant, one episode per turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["Dataset", "Question", "Turn"]


@dataclass(frozen=True)
class Turn:
    """One stored turn: ``id`` is unique within its conversation."""

    id: str
    conversation: str
    session: str
    text: str
    speaker: str | None = None
    time: datetime | None = None


@dataclass(frozen=True)
class Question:
    """A question asked of one conversation; ``evidence`` are ids of its turns."""

    conversation: str
    question: str
    evidence: tuple[str, ...]
    category: str = ""


@dataclass
class Dataset:
    """Turns and questions of a file; ``dropped`` counts evidence ids that named no turn
    (only when the loader was told to drop them)."""

    format: str
    turns: list[Turn]
    questions: list[Question]
    dropped: int = 0
    conversations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.conversations:
            self.conversations = list(dict.fromkeys(t.conversation for t in self.turns))

    def only(self, categories: Sequence[str]) -> Dataset:
        """The same turns, only the questions of ``categories`` (all when empty)."""
        if not categories:
            return self
        wanted = set(categories)
        questions = [q for q in self.questions if q.category in wanted]
        return Dataset(self.format, self.turns, questions, self.dropped, self.conversations)
