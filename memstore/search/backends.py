"""The search backends for a database's dialect."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.search import postgres, postgres_recall, sqlite
from memstore.search.facts import FactSearch
from memstore.search.tables import EpisodeSearchBackend
from memstore.search.vector_cache import VectorCache

__all__ = ["SearchBackend", "backend_for", "episode_search_for", "fact_search_for"]

# Dense search of one table (episodes' HNSW plans on Postgres); store.search.
SearchBackend = postgres.PostgresSearch | sqlite.SqliteSearch


def backend_for(engine: AsyncEngine, **options: Any) -> SearchBackend:
    if engine.dialect.name == "postgresql":
        return postgres.PostgresSearch(**options)
    return sqlite.SqliteSearch()


def episode_search_for(engine: AsyncEngine, backend: SearchBackend) -> EpisodeSearchBackend:
    """Episode recall in one statement; on Postgres it shares ``backend``'s plan state."""
    if isinstance(backend, postgres.PostgresSearch):
        return postgres_recall.EpisodeSearch(vectors=backend)
    return sqlite.EpisodeSearch(cache=VectorCache())


def fact_search_for(engine: AsyncEngine) -> FactSearch:
    """Fact recall in one statement on the engine's backend."""
    return FactSearch(postgres=engine.dialect.name == "postgresql")
