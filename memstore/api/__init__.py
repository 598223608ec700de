"""The MemoryStore API, one mixin per kind of memory (see ``memstore.store``)."""

from memstore.api.agent import AgentAPI
from memstore.api.blocks import BlockAPI
from memstore.api.episodes import EpisodeAPI
from memstore.api.facts import FactAPI
from memstore.api.tenants import TenantAPI
from memstore.api.transfer import TransferAPI
from memstore.api.working import WorkingAPI

__all__ = [
    "AgentAPI",
    "BlockAPI",
    "EpisodeAPI",
    "FactAPI",
    "TenantAPI",
    "TransferAPI",
    "WorkingAPI",
]
