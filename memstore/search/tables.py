"""The searchable tables and what a backend's search must provide."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, literal_column

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
