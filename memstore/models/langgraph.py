from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId
from memstore.db.types import JSONDoc, NullableJSONDoc

__all__ = ["LangGraphItemRow"]


class LangGraphItemRow(Base):
    """One item of the LangGraph store (memstore.integrations.langgraph).

    ``namespace`` is the namespace below the tenant, labels joined by "."
    (LangGraph forbids "." inside a label, so the join is unambiguous; "" is
    the tenant's root). Working memory does not fit: its scope is a fixed
    three-level path and it has no vectors or created_at.
    """

    __tablename__ = "langgraph_items"

    user_id: Mapped[TenantId]
    namespace: Mapped[str] = mapped_column(String(1024), primary_key=True)
    key: Mapped[str] = mapped_column(String(1024), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONDoc)
    # float32 unit vectors of the indexed fields, concatenated; NULL = not indexed.
    vectors: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # The JSON paths the vectors were computed from, so that a new embedder can
    # compute them again (reembed, imports); NULL = not indexed, or indexed
    # before migration 0012 recorded them.
    index_fields: Mapped[list[str] | None] = mapped_column(NullableJSONDoc, nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    # LangGraph TTLs are in minutes; kept so a read can push expires_at forward.
    ttl_minutes: Mapped[float | None] = mapped_column(Float, nullable=True)
    expires_at: Mapped[datetime | None]

    __table_args__ = (Index(None, "user_id", "expires_at"),)
