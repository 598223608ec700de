"""Shared state, constants and transactions of the MemoryStore API."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, cast

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memstore.agent.access import AccessTracker
from memstore.db.unit import Clock, Database
from memstore.embeddings.base import Embedder
from memstore.fact_input import MAX_FACT_FIELD_CHARS
from memstore.recall.hybrid import HybridRecall
from memstore.recall.search import SearchBackend
from memstore.recall.settings import EmbedderGuard
from memstore.threads import ThreadBuffer

if TYPE_CHECKING:
    from memstore.store import MemoryStore

__all__ = [
    "DEFAULT_BLOCK_CHAR_LIMIT",
    "EXPORT_FORMAT",
    "FROM_DUMP",
    "MAX_BATCH",
    "MAX_EPISODE_ID_CHARS",
    "MAX_FACT_FIELD_CHARS",
    "Clock",
    "FromDump",
    "StoreBase",
]

EXPORT_FORMAT = "memstore-export/1"
DEFAULT_BLOCK_CHAR_LIMIT = 5_000
MAX_BATCH = 10_000
MAX_EPISODE_ID_CHARS = 36

_ACCESS_KINDS = frozenset({"episode", "fact", "block"})


class FromDump(enum.Enum):
    FROM_DUMP = "from-dump"


# Default of import_(user_id=...): the tenant recorded in the dump (None is anonymous).
FROM_DUMP = FromDump.FROM_DUMP
_IMPORT_BATCH = 500


class StoreBase:
    """State and transaction helpers shared by every part of the MemoryStore API.

    :class:`memstore.store.MemoryStore` sets these attributes in ``__init__``;
    the mixins in ``memstore.api`` use them.
    """

    engine: AsyncEngine
    embedder: Embedder
    embedder_identity: str
    allow_embedder_change: bool
    embedder_guard: EmbedderGuard
    search: SearchBackend
    block_char_limit: int
    scratchpad_limit: int
    rls: bool
    threads: ThreadBuffer
    access_tracker: AccessTracker
    _recall: HybridRecall
    db: Database

    @property
    def _facade(self) -> MemoryStore:
        """This object as the whole facade: every mixin ends up in MemoryStore."""
        return cast("MemoryStore", self)

    @contextmanager
    def reads_unrecorded(self) -> Iterator[None]:
        """Reads inside this block (by this task) do not count as accesses.

        For tools that look at memory without being the agent (the inspector):
        their recalls must not raise the access prior of what they looked at.
        """
        with self.access_tracker.muted():
            yield

    def now(self) -> datetime:
        return self.db.now()

    @asynccontextmanager
    async def _write(self, tenant: str | None = None) -> AsyncIterator[AsyncSession]:
        async with self.db.write(tenant) as session:
            yield session

    @asynccontextmanager
    async def _read(
        self, tenant: str | None = None, *, snapshot: bool = False
    ) -> AsyncIterator[AsyncSession]:
        async with self.db.read(tenant, snapshot=snapshot) as session:
            yield session

    async def _as_tenant(self, session: AsyncSession, tenant: str) -> None:
        await self.db.set_tenant(session, tenant)
