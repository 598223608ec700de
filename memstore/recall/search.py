"""What a database must provide for hybrid recall: the searchable tables and the protocol."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from sqlalchemy import ColumnElement, func, literal_column, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.db.unit import Reader
from memstore.models import EpisodeRow, FactRow
from memstore.models.search import document
from memstore.recall.statement import EpisodeRecall, RecallHit

__all__ = [
    "EPISODES",
    "FACTS",
    "EpisodeSearchBackend",
    "RecallTable",
    "SearchBackend",
    "corpus_stats",
    "neighbours",
    "occurred_at",
    "occurred_between",
    "positions",
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

    async def keyword(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        terms: Sequence[str],
        cap: int,
        where: Sequence[ColumnElement[bool]],
    ) -> list[tuple[str, str]]:
        """(id, text) of the tenant's rows containing any term (as a prefix), best ``cap``."""
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


async def corpus_stats(
    session: AsyncSession,
    model: RecallTable,
    user_id: str,
    where: Sequence[ColumnElement[bool]],
) -> tuple[int, float]:
    """Number of the tenant's searchable rows and their mean text length (BM25 statistics)."""
    stmt = select(func.count(), func.avg(func.length(row_text(model)))).where(
        model.user_id == user_id, *where
    )
    count, avg = (await session.execute(stmt)).one()
    return int(count or 0), float(avg or 0.0)


async def positions(
    session: AsyncSession,
    user_id: str,
    ids: list[str],
    where: Sequence[ColumnElement[bool]],
) -> dict[str, tuple[str, int | None]]:
    """(session id, turn) of the tenant's episodes ``ids``."""
    stmt = select(EpisodeRow.id, EpisodeRow.session_id, EpisodeRow.turn).where(
        EpisodeRow.user_id == user_id, EpisodeRow.id.in_(ids), *where
    )
    return {r[0]: (r[1], r[2]) for r in (await session.execute(stmt)).all()}


async def neighbours(
    session: AsyncSession,
    user_id: str,
    places: set[tuple[str, int]],
    where: Sequence[ColumnElement[bool]],
) -> dict[str, tuple[str, int]]:
    """The tenant's episodes at the given (session id, turn) places."""
    if not places:
        return {}
    stmt = select(EpisodeRow.id, EpisodeRow.session_id, EpisodeRow.turn).where(
        EpisodeRow.user_id == user_id,
        tuple_(EpisodeRow.session_id, EpisodeRow.turn).in_(sorted(places)),
        *where,
    )
    return {r[0]: (r[1], int(r[2] or 0)) for r in (await session.execute(stmt)).all()}


def occurred_between(time_range: tuple[datetime, datetime]) -> ColumnElement[bool]:
    """Episodes that happened within ``time_range`` (inclusive)."""
    return EpisodeRow.occurred_at.between(*time_range)


async def occurred_at(session: AsyncSession, user_id: str, ids: list[str]) -> dict[str, datetime]:
    """When each of the tenant's episodes ``ids`` happened."""
    stmt = select(EpisodeRow.id, EpisodeRow.occurred_at).where(
        EpisodeRow.user_id == user_id, EpisodeRow.id.in_(ids)
    )
    return {r[0]: r[1] for r in (await session.execute(stmt)).all()}
