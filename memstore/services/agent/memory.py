"""The services the agent helpers (context packing, prefetch, memory tools) work through.

They are given the services themselves, not the ``MemoryStore`` facade: the
facade forwards to the services, so nothing below it needs to know it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime

from memstore.db.unit import Database
from memstore.services.access import AccessService
from memstore.services.blocks import BlockService
from memstore.services.episodes import EpisodeService
from memstore.services.facts import FactService
from memstore.services.tenants import TenantService

__all__ = ["AgentMemory"]


@dataclass(frozen=True)
class AgentMemory:
    db: Database
    episodes: EpisodeService
    facts: FactService
    blocks: BlockService
    tenants: TenantService
    access: AccessService

    def now(self) -> datetime:
        return self.db.now()

    def reads_unrecorded(self) -> AbstractContextManager[None]:
        """Reads inside this block (by this task) do not count as accesses."""
        return self.access.access_tracker.muted()
