"""The services behind the MemoryStore facade, one per kind of memory.

Each is built one way: a frozen, keyword-only dataclass of its collaborators on
:class:`~memstore.services.base.Service` (the :class:`~memstore.db.unit.Database`
and the others); ``memstore.store`` wires them together.
"""

from memstore.services.agent.service import AgentService
from memstore.services.blocks import BlockService
from memstore.services.changes import ChangeService
from memstore.services.episodes import EpisodeService
from memstore.services.facts import FactService
from memstore.services.tenants import TenantService
from memstore.services.transfer import TransferService
from memstore.services.working import WorkingService

__all__ = [
    "AgentService",
    "BlockService",
    "ChangeService",
    "EpisodeService",
    "FactService",
    "TenantService",
    "TransferService",
    "WorkingService",
]
