"""SQLite: FTS5 finds keyword candidates; vectors are scored exactly with numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import ColumnElement, TableClause, column, select, table, text
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.lexical import fts5_query
from memstore.repositories.search import RecallTable, row_text

__all__ = ["SqliteSearch"]


def _fts_tables(model: RecallTable) -> tuple[TableClause, TableClause]:
    name = model.__tablename__
    fts = table(f"{name}_fts", column("rowid"), column("text"), column("rank"))
    keys = table(f"{name}_fts_keys", column("rowid"), column("user_id"), column("id"))
    return fts, keys


class SqliteSearch:
    """Exact search over one tenant's rows; SQLite is the embedded, single-node backend."""

    async def dense(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        query: np.ndarray,
        depth: int,
        where: Sequence[ColumnElement[bool]],
    ) -> dict[str, float]:
        stmt = select(model.id, model.embedding).where(
            model.user_id == user_id, model.embedding.is_not(None), *where
        )
        rows = (await session.execute(stmt)).all()
        if not rows:
            return {}
        ids = [r[0] for r in rows]
        matrix = np.stack([r[1] for r in rows])
        sims = matrix @ query.astype(np.float32)
        order = np.argsort(-sims, kind="stable")[:depth]
        return {ids[i]: float(sims[i]) for i in order}

    async def keyword(
        self,
        session: AsyncSession,
        model: RecallTable,
        user_id: str,
        terms: Sequence[str],
        cap: int,
        where: Sequence[ColumnElement[bool]],
    ) -> list[tuple[str, str]]:
        if not terms:
            return []
        fts, keys = _fts_tables(model)
        stmt = (
            select(model.id, row_text(model))
            .select_from(fts)
            .join(keys, keys.c.rowid == fts.c.rowid)
            .join(model, (model.user_id == keys.c.user_id) & (model.id == keys.c.id))
            .where(
                text(f"{model.__tablename__}_fts MATCH :fts_query").bindparams(
                    fts_query=fts5_query(terms)
                ),
                keys.c.user_id == user_id,
                *where,
            )
            .order_by(fts.c.rank)
            .limit(cap)
        )
        return [(r[0], r[1]) for r in (await session.execute(stmt)).all()]
