"""The search backends for a database's dialect."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.recall import search_postgres, search_sqlite
from memstore.recall.search import EpisodeSearchBackend, SearchBackend
from memstore.recall.vector_cache import VectorCache

__all__ = ["backend_for", "episode_search_for"]


def backend_for(engine: AsyncEngine, **options: Any) -> SearchBackend:
    if engine.dialect.name == "postgresql":
        return search_postgres.PostgresSearch(**options)
    return search_sqlite.SqliteSearch()


def episode_search_for(engine: AsyncEngine, backend: SearchBackend) -> EpisodeSearchBackend:
    """Episode recall in one statement; on Postgres it shares ``backend``'s plan state."""
    if isinstance(backend, search_postgres.PostgresSearch):
        return search_postgres.EpisodeSearch(vectors=backend)
    return search_sqlite.EpisodeSearch(cache=VectorCache())
