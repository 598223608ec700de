"""A test's own way to the database and the parts behind a store, without reaching into it.

The facade's components are private. A test that needs the database itself (raw SQL,
row counts, DDL, the file's path) opens :func:`own_engine` on the store's URL. A test
that watches a component at work (statements on the store's own engine, the change
signal's counters, the access buffer, the dense search's plan) builds the store from
parts it made and keeps with :func:`store_with_parts`, as :meth:`MemoryStore.bind`
builds a view from given parts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from memstore import MemoryStore
from memstore.db.engine import create_engine
from memstore.db.unit import Database
from memstore.embeddings.base import Embedder
from memstore.repositories.tenants import tenant_tables
from memstore.search.backends import backend_for, episode_search_for
from memstore.services.access import AccessTracker
from memstore.store import SharedParts, StoreConfig

__all__ = ["StoreParts", "own_engine", "store_with_parts", "tenant_rows"]


@asynccontextmanager
async def own_engine(url: str, **options: Any) -> AsyncIterator[AsyncEngine]:
    """An engine of the test's own on ``url``, disposed on exit."""
    engine = create_engine(url, **options)
    try:
        yield engine
    finally:
        await engine.dispose()


@dataclass(frozen=True)
class StoreParts:
    """A store and the parts it was built from, which the test holds."""

    store: MemoryStore
    engine: AsyncEngine
    db: Database
    tracker: AccessTracker
    search: Any  # the dense search backend (``last_plan`` on Postgres)


@asynccontextmanager
async def store_with_parts(
    url: str,
    *,
    embedder: Embedder | None = None,
    engine_options: dict[str, Any] | None = None,
    **config: Any,
) -> AsyncIterator[StoreParts]:
    """A store on the migrated database ``url`` built from parts made here (closed on exit).

    ``config`` are :class:`StoreConfig` options.
    """
    options = StoreConfig(**config)
    engine = create_engine(url, **(engine_options or {}))
    db = Database(engine, clock=options.clock, rls=options.rls)
    tracker = AccessTracker(db)
    threshold = options.exact_scan_threshold
    search = backend_for(engine, **({} if threshold is None else {"exact_threshold": threshold}))
    shared = SharedParts(
        db=db, access_tracker=tracker, episode_search=episode_search_for(engine, search)
    )
    store = MemoryStore(engine=engine, config=options, embedder=embedder, shared=shared)
    try:
        yield StoreParts(store=store, engine=engine, db=db, tracker=tracker, search=search)
    finally:
        try:
            await tracker.close()
        finally:
            await db.signal.close()
            await engine.dispose()


# Columns left out of :func:`tenant_rows`: vectors read back as other types through
# another engine than the store's.
_UNCOMPARED = {"Vector", "VectorList", "LargeBinary"}


async def tenant_rows(connection: AsyncConnection | AsyncSession) -> list[str]:
    """Every row of every tenant table (vectors aside), as text, in a stable order."""
    rows: list[str] = []
    for table in tenant_tables():
        columns = [c for c in table.columns if type(c.type).__name__ not in _UNCOMPARED]
        result = await connection.execute(select(*columns))
        rows += sorted(f"{table.name}: {tuple(row)!r}" for row in result.all())
    return rows
