"""The search half of each dialect: one registration per backend."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.dialects import POSTGRES, SQLITE, Dialect, dialect_for
from memstore.errors import ConfigurationError
from memstore.search import postgres, postgres_recall, sqlite
from memstore.search.facts import FactSearch
from memstore.search.tables import EpisodeSearchBackend, SearchHalf

__all__ = ["SearchBackend", "backend_for", "episode_search_for", "fact_search_for"]

# Dense search of one table (episodes' HNSW plans on Postgres); store.search.
SearchBackend = postgres.PostgresSearch | sqlite.SqliteSearch

# Each dialect's search statements (memstore/dialects registers the dialect itself).
_HALVES: dict[Dialect, SearchHalf] = {POSTGRES: postgres_recall.SEARCH, SQLITE: sqlite.SEARCH}


def _half(engine: AsyncEngine) -> SearchHalf:
    dialect = dialect_for(engine)
    half = _HALVES.get(dialect)
    if half is None:
        raise ConfigurationError(f"no search statements for the {dialect.label} backend")
    return half


def backend_for(engine: AsyncEngine, **options: Any) -> SearchBackend:
    vectors: SearchBackend = _half(engine).vectors(**options)
    return vectors


def episode_search_for(engine: AsyncEngine, backend: SearchBackend) -> EpisodeSearchBackend:
    """Episode recall in one statement; on Postgres it shares ``backend``'s plan state."""
    return _half(engine).episodes(backend)


def fact_search_for(engine: AsyncEngine) -> FactSearch:
    """Fact recall in one statement on the engine's backend."""
    return FactSearch(_half(engine).facts)
