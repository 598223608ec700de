"""The search backend for a database's dialect."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.recall.postgres import PostgresSearch
from memstore.recall.search import SearchBackend
from memstore.recall.sqlite import SqliteSearch

__all__ = ["backend_for"]


def backend_for(engine: AsyncEngine, **options: Any) -> SearchBackend:
    if engine.dialect.name == "postgresql":
        return PostgresSearch(**options)
    return SqliteSearch()
