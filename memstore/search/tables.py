"""The searchable tables and what a backend's search must provide."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, func, literal_column, select

from memstore.db.unit import Reader
from memstore.models import EpisodeRow, FactRow
from memstore.models.search import document
from memstore.search.episodes import RecallHit
from memstore.search.statement import EpisodeRecall

__all__ = [
    "EPISODES",
    "FACTS",
    "EpisodeSearchBackend",
    "RecallTable",
    "corpus_size",
    "row_text",
]

# The two searchable tables; facts never use the ANN index (see search_postgres.py).
RecallTable = type[EpisodeRow] | type[FactRow]
EPISODES: RecallTable = EpisodeRow
FACTS: RecallTable = FactRow


class EpisodeSearchBackend(Protocol):
    def one_statement(self, user_id: str, time_range: tuple[datetime, datetime] | None) -> bool:
        """Whether the tenant's next recall is one statement that needs no transaction."""
        ...

    async def recall(self, session: Reader, request: EpisodeRecall) -> list[RecallHit]:
        """The request's final rows, best first, in one statement (plus cached reads)."""
        ...

    def drop(self, user_id: str) -> None:
        """Forget whatever is cached in this process about the tenant."""
        ...


def row_text(model: RecallTable) -> ColumnElement[Any]:
    """The text keyword search scores, as SQL (the same text the FTS index holds)."""
    name = model.__tablename__
    return literal_column(document(name, prefix=f"{name}."))


async def corpus_size(session: Reader, user_id: str) -> tuple[int, float]:
    """The tenant's episodes and their median searchable text length (BM25's corpus).

    BM25 weighs a row's length against this typical length. The median, not the
    mean: in a history mixing short messages with long answers, the long tail
    lifts the mean until a long text counts as ordinary and a short one is barely
    favoured; the median is what most rows are. The lower median on both backends.
    """
    count = int(
        await session.scalar(select(func.count()).where(EpisodeRow.user_id == user_id)) or 0
    )
    if not count:
        return 0, 0.0
    length = func.length(row_text(EpisodeRow))
    middle = await session.scalar(
        select(length)
        .where(EpisodeRow.user_id == user_id)
        .order_by(length)
        .limit(1)
        .offset((count - 1) // 2)
    )
    return count, float(middle or 0)
