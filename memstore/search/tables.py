"""The searchable tables and what a backend's search must provide."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, func, literal_column, select

from memstore.db.unit import Reader
from memstore.models import EpisodeRow, FactRow
from memstore.models.search import document
from memstore.search.episodes import RecallHit
from memstore.search.statement import Dialect, EpisodeRecall, FactRecall

__all__ = [
    "EPISODES",
    "FACTS",
    "EpisodeSearchBackend",
    "FactBackend",
    "RecallTable",
    "SearchHalf",
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


class FactBackend(Protocol):
    """A backend's part of the fact recall statement (memstore/search/facts.py)."""

    @property
    def spelling(self) -> Dialect:
        """How the backend spells the shared parts of the statement."""
        ...

    @property
    def one_statement(self) -> bool:
        """The statement alone ranks (no vectors are read before it), so it needs no
        transaction; otherwise the reads and the statement share one snapshot."""
        ...

    def __hash__(self) -> int:
        """Statements are cached per backend."""
        ...

    def dense(self, as_of: str) -> str:
        """The ``dense(id, s)`` CTE body over the facts kept by ``as_of`` (AND ...)."""
        ...

    def term_counts(self, table: str, row_filter: str) -> str:
        """The CTEs ending in ``tf`` over ``table AS e`` rows kept by ``row_filter``."""
        ...

    def keyword_params(self, terms: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Values and types of :meth:`term_counts`' parameters."""
        ...

    async def dense_values(
        self, session: Reader, request: FactRecall, where: Sequence[ColumnElement[bool]]
    ) -> dict[str, Any]:
        """The values :meth:`dense` binds; ``where`` is its ``as_of`` as conditions."""
        ...


class SearchHalf(Protocol):
    """A backend's search: registered for its dialect in memstore/search/backends.py."""

    @property
    def facts(self) -> FactBackend:
        """Its part of the fact recall statement."""
        ...

    def vectors(self, **options: Any) -> Any:
        """Dense search of one table (the store's ``search``)."""
        ...

    def episodes(self, vectors: Any) -> EpisodeSearchBackend:
        """Episode recall, sharing ``vectors``' state."""
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
