"""Deployment settings recorded in the database (``memstore_config``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.errors import DimensionMismatch
from memstore.models import ConfigRow
from memstore.models.config import EMBEDDING_DIM_KEY

__all__ = ["recorded_embedding_dim"]


async def recorded_embedding_dim(engine: AsyncEngine) -> int:
    """The embedding width fixed when the database was migrated (or last re-embedded)."""
    async with engine.connect() as conn:
        value = await conn.scalar(
            select(ConfigRow.value).where(ConfigRow.key == EMBEDDING_DIM_KEY)
        )
    if value is None:
        raise DimensionMismatch("the database records no embedding dimension; run migrations")
    return int(value)
