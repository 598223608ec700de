from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, Float, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from memstore.db.base import Base
from memstore.db.columns import TenantId
from memstore.db.types import JSONDoc, Vector
from memstore.dialects import dialects

__all__ = ["FactRow", "subject_key"]


def subject_key(subject: str) -> str:
    """What the indexes key a subject by: its SHA-256, hex.

    Subjects may be 2,000 characters (8,000 UTF-8 bytes), more than a Postgres
    b-tree entry can hold (2,704 bytes); a fixed-width digest fits on every backend
    and is unique in practice, so the single-value rule keeps its meaning.
    """
    return hashlib.sha256(subject.encode("utf-8")).hexdigest()


def _unique_where(name: str, where: str, *columns: str) -> Index:
    """A partial unique index: the same predicate on every backend (``<dialect>_where``)."""
    partial: dict[str, Any] = {f"{d.name}_where": text(where) for d in dialects()}
    return Index(name, *columns, unique=True, **partial)


def _subject_key_default(context: Any) -> str:
    return subject_key(context.get_current_parameters()["subject"])


class FactRow(Base):
    """One version of a bi-temporal fact.

    Rows are never updated except to close transaction time (``superseded_at``).
    ``fact_id`` names the logical fact across its versions; ``id`` one version.
    """

    __tablename__ = "facts"

    user_id: Mapped[TenantId]
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    fact_id: Mapped[str] = mapped_column(String(36))
    subject: Mapped[str] = mapped_column(Text)
    # Derived from subject on every insert (migration 0006); never set it yourself.
    subject_key: Mapped[str] = mapped_column(
        String(64), default=_subject_key_default, info={"derived": True}
    )
    predicate: Mapped[str] = mapped_column(String(255))
    object: Mapped[str] = mapped_column(Text)
    single_valued: Mapped[bool] = mapped_column(Boolean)
    confidence: Mapped[float] = mapped_column(Float)
    sources: Mapped[list[str]] = mapped_column(JSONDoc)
    valid_from: Mapped[datetime]
    valid_to: Mapped[datetime | None]
    recorded_at: Mapped[datetime]
    superseded_at: Mapped[datetime | None]
    # Embedding of "subject predicate object" (migration 0003); NULL for older rows.
    embedding: Mapped[Any] = mapped_column(Vector, nullable=True)

    __table_args__ = (
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence_range"),
        CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name="valid_interval"),
        Index(None, "user_id", "subject_key", "predicate", "recorded_at"),
        # One current version per logical fact: a concurrent double write of the
        # same fact fails here instead of producing two current rows.
        _unique_where("uq_facts_current_version", "superseded_at IS NULL", "user_id", "fact_id"),
        # A single-valued (subject, predicate) has at most one open-ended current value.
        _unique_where(
            "uq_facts_current_single_value",
            "superseded_at IS NULL AND valid_to IS NULL AND single_valued",
            "user_id",
            "subject_key",
            "predicate",
        ),
    )
