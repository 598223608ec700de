"""ORM models. Importing this package registers every table on ``Base.metadata``."""

from memstore.db.base import Base
from memstore.models.access import AccessStatRow
from memstore.models.blocks import BlockRow, BlockVersionRow
from memstore.models.changes import ChangeHeadRow, ChangeRow
from memstore.models.config import ConfigRow
from memstore.models.consolidation import EpisodeConsolidationRow
from memstore.models.episodes import EpisodeRow, SessionTurnRow
from memstore.models.facts import FactRow
from memstore.models.langgraph import LangGraphItemRow
from memstore.models.threads import SlotRow, ThreadRow
from memstore.models.working_memory import WorkingMemoryCheckpointRow, WorkingMemoryRow

__all__ = [
    "AccessStatRow",
    "Base",
    "BlockRow",
    "BlockVersionRow",
    "ChangeHeadRow",
    "ChangeRow",
    "ConfigRow",
    "EpisodeConsolidationRow",
    "EpisodeRow",
    "FactRow",
    "LangGraphItemRow",
    "SessionTurnRow",
    "SlotRow",
    "ThreadRow",
    "WorkingMemoryCheckpointRow",
    "WorkingMemoryRow",
]
