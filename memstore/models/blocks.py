from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKeyConstraint, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId


class BlockRow(Base):
    """A named, pinned working block; ``version`` drives optimistic concurrency."""

    __tablename__ = "blocks"

    user_id: Mapped[TenantId]
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    content: Mapped[str] = mapped_column(Text)
    pinned_order: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]


class BlockVersionRow(Base):
    """Every content a block has had, including the current one."""

    __tablename__ = "block_versions"

    user_id: Mapped[TenantId]
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]

    __table_args__ = (
        ForeignKeyConstraint(
            ["user_id", "name"], ["blocks.user_id", "blocks.name"], ondelete="CASCADE"
        ),
    )
