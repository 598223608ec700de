from __future__ import annotations

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base

__all__ = ["EMBEDDER_KEY", "EMBEDDING_DIM_KEY", "ConfigRow"]

EMBEDDING_DIM_KEY = "embedding_dim"
# Identity of the embedder whose vector space the stored embeddings are in
# (absent until the first vector is written; see memstore.search.settings).
EMBEDDER_KEY = "embedder"


class ConfigRow(Base):
    """Deployment-wide settings fixed at migration time (not tenant data: no user_id).

    ``embedding_dim`` is the width of every stored vector; stores opened with an
    embedder of another width are refused. ``embedder`` names the embedder that
    made them; stores opened with another one are refused too.
    """

    __tablename__ = "memstore_config"
    # Holds no personal data: forget and export rightly skip it.
    __table_args__ = {"info": {"global": True}}  # noqa: RUF012  (read by SQLAlchemy once)

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
