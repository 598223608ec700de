"""ORM models. Importing this package registers every table on ``Base.metadata``."""

from memstore.db.base import Base
from memstore.models.blocks import BlockRow, BlockVersionRow
from memstore.models.config import ConfigRow
from memstore.models.episodes import EpisodeRow
from memstore.models.facts import FactRow

__all__ = ["Base", "BlockRow", "BlockVersionRow", "ConfigRow", "EpisodeRow", "FactRow"]
