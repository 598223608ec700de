"""The dialect's INSERT, which has ``ON CONFLICT`` (``on_conflict_do_update/nothing``).

Each dialect gives its construct (:meth:`memstore.dialects.Dialect.insert`); both
accept the same ``index_elements`` / ``set_`` / ``where`` arguments and ``excluded``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from memstore.dialects import dialect_for

__all__ = ["insert_for"]


def insert_for(bind: AsyncSession | AsyncConnection) -> Any:
    """``insert`` of the dialect ``bind`` talks to."""
    return dialect_for(bind).insert
