"""The search backend for a database's dialect."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.repositories.search import SearchBackend
from memstore.repositories.search_postgres import PostgresSearch
from memstore.repositories.search_sqlite import SqliteSearch

__all__ = ["backend_for"]


def backend_for(engine: AsyncEngine, **options: Any) -> SearchBackend:
    if engine.dialect.name == "postgresql":
        return PostgresSearch(**options)
    return SqliteSearch()
