"""What a database must provide for hybrid recall: the searchable tables and the protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.models import EpisodeRow, FactRow

__all__ = ["RecallTable", "SearchBackend", "corpus_stats", "row_text"]

# The two searchable tables; facts never use the ANN index (see postgres.py).
RecallTable = type[EpisodeRow] | type[FactRow]


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


def row_text(model: RecallTable) -> ColumnElement[Any]:
    """The text keyword search scores, as SQL (the same text the FTS index holds)."""
    if model is EpisodeRow:
        return func.coalesce(EpisodeRow.search_text, "")
    return FactRow.subject + " " + func.replace(FactRow.predicate, "_", " ") + " " + FactRow.object


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
