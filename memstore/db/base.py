"""The single declarative base; every table and constraint gets a predictable name."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

from memstore.db.types import UTCDateTime

__all__ = ["NAMING_CONVENTION", "Base"]

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    # Every timestamp is timezone-aware UTC on both databases.
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime}
