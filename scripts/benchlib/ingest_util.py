"""Small database chores shared by scenarios."""

from __future__ import annotations

from .context import Target
from .raw import pg_connect

__all__ = ["HNSW", "drop_hnsw"]

HNSW = "ix_episodes_embedding_hnsw"


async def drop_hnsw(target: Target) -> None:
    conn = await pg_connect(target.raw)
    try:
        await conn.execute(f"DROP INDEX IF EXISTS {HNSW}")
    finally:
        await conn.close()
