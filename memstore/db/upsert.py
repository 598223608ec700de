"""The dialect's INSERT, which has ``ON CONFLICT`` (``on_conflict_do_update/nothing``).

One place chooses between the Postgres and SQLite constructs; both accept the
same ``index_elements`` / ``set_`` / ``where`` arguments and ``excluded``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

__all__ = ["insert_for"]


def insert_for(bind: AsyncSession | AsyncConnection) -> Any:
    """``insert`` of the dialect ``bind`` talks to (postgresql or sqlite)."""
    dialect = bind.get_bind().dialect if isinstance(bind, AsyncSession) else bind.dialect
    return pg_insert if dialect.name == "postgresql" else sqlite_insert
