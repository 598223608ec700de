"""The searchable tables and what a backend's search must provide."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from sqlalchemy import ColumnElement, literal_column
from sqlalchemy.ext.asyncio import AsyncSession

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
    "SearchBackend",
    "row_text",
]

# The two searchable tables; facts never use the ANN index (see search_postgres.py).
RecallTable = type[EpisodeRow] | type[FactRow]
EPISODES: RecallTable = EpisodeRow
FACTS: RecallTable = FactRow


class SearchBackend(Protocol):
    async def dense(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        query: np.ndarray,
        depth: int,
        where: Sequence[ColumnElement[bool]],
    ) -> dict[str, float]:
        """The tenant's ``depth`` rows most similar to ``query``: id -> cosine similarity."""
        ...


class EpisodeSearchBackend(Protocol):
    def one_statement(self, user_id: str, time_range: tuple[datetime, datetime] | None) -> bool:
        """Whether the tenant's next recall is one statement that needs no transaction."""
        ...

    async def recall(
        self,
        session: Reader,
        request: EpisodeRecall,
        qvec: np.ndarray,
        *,
        k1: float,
        b: float,
    ) -> list[RecallHit]:
        """The request's final rows, best first, in one statement (plus cached reads)."""
        ...

    def drop(self, user_id: str) -> None:
        """Forget whatever is cached in this process about the tenant."""
        ...


def row_text(model: RecallTable) -> ColumnElement[Any]:
    """The text keyword search scores, as SQL (the same text the FTS index holds)."""
    name = model.__tablename__
    return literal_column(document(name, prefix=f"{name}."))
