from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, Float, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.types import JSONDoc, UTCDateTime, Vector


class FactRow(Base):
    """One version of a bi-temporal fact.

    Rows are never updated except to close transaction time (``superseded_at``).
    ``fact_id`` names the logical fact across its versions; ``id`` one version.
    """

    __tablename__ = "facts"

    user_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    fact_id: Mapped[str] = mapped_column(String(36))
    subject: Mapped[str] = mapped_column(Text)
    predicate: Mapped[str] = mapped_column(String(255))
    object: Mapped[str] = mapped_column(Text)
    single_valued: Mapped[bool] = mapped_column(Boolean)
    confidence: Mapped[float] = mapped_column(Float)
    sources: Mapped[list[str]] = mapped_column(JSONDoc)
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
    superseded_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Embedding of "subject predicate object" (migration 0003); NULL for older rows.
    embedding: Mapped[Any] = mapped_column(Vector, nullable=True)

    __table_args__ = (
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence_range"),
        CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name="valid_interval"),
        Index(None, "user_id", "subject", "predicate", "recorded_at"),
        # One current version per logical fact: a concurrent double write of the
        # same fact fails here instead of producing two current rows.
        Index(
            "uq_facts_current_version",
            "user_id",
            "fact_id",
            unique=True,
            sqlite_where=text("superseded_at IS NULL"),
            postgresql_where=text("superseded_at IS NULL"),
        ),
        # A single-valued (subject, predicate) has at most one open-ended current value.
        Index(
            "uq_facts_current_single_value",
            "user_id",
            "subject",
            "predicate",
            unique=True,
            sqlite_where=text("superseded_at IS NULL AND valid_to IS NULL AND single_valued"),
            postgresql_where=text("superseded_at IS NULL AND valid_to IS NULL AND single_valued"),
        ),
    )
