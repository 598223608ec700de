"""The search half of each dialect, as the engine's backend gives it (Dialect.search)."""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.dialects import dialect_for
from memstore.search.facts import FactSearch
from memstore.search.tables import EpisodeSearchBackend

__all__ = ["SearchBackend", "backend_for", "episode_search_for", "fact_search_for"]


class SearchBackend(Protocol):
    """A backend's dense search of one table (the store's ``search``): opaque here,
    handed back to the same backend's episode search."""


def backend_for(engine: AsyncEngine, **options: Any) -> SearchBackend:
    vectors: SearchBackend = dialect_for(engine).search().vectors(**options)
    return vectors


def episode_search_for(engine: AsyncEngine, backend: SearchBackend) -> EpisodeSearchBackend:
    """Episode recall in one statement; on Postgres it shares ``backend``'s plan state."""
    return dialect_for(engine).search().episodes(backend)


def fact_search_for(engine: AsyncEngine) -> FactSearch:
    """Fact recall in one statement on the engine's backend."""
    return FactSearch(dialect_for(engine).search().facts)
