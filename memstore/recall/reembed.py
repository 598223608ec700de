"""Recompute stored embeddings: backfill rows that have none, or switch to another embedder.

Switching to an embedder of another width changes the recorded dimension and, on
Postgres, the column type (``vector(n)``) and its HNSW index, in one transaction with
the recomputed vectors; nothing else in the schema is touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memstore.db.crosstenant import cross_tenant_connection
from memstore.documents import episode_text, fact_text
from memstore.embeddings.base import Embedder, embed_checked, passages_checked
from memstore.embeddings.identity import embedder_identity
from memstore.models import ConfigRow, EpisodeRow, FactRow
from memstore.models.config import EMBEDDER_KEY, EMBEDDING_DIM_KEY
from memstore.models.search import VECTOR_INDEX, vector_storage
from memstore.recall.settings import set_embedder
from memstore.types import Episode, Fact

__all__ = ["ReembedResult", "reembed"]

_BATCH = 256


@dataclass(frozen=True)
class ReembedResult:
    dimension: int
    previous_dimension: int
    episodes: int
    facts: int
    embedder: str = ""
    previous_embedder: str | None = None


def _episode_text(row: Any) -> str:
    return episode_text(Episode(session_id=row.session_id, input=row.input, output=row.output))


def _fact_text(row: Any) -> str:
    return fact_text(Fact(subject=row.subject, predicate=row.predicate, object=row.object))


async def _change_dimension(conn: AsyncConnection, dim: int) -> None:
    if conn.dialect.name == "postgresql":
        await conn.execute(text(f"DROP INDEX IF EXISTS {VECTOR_INDEX[0]}"))
        for table in ("episodes", "facts"):
            await conn.execute(
                text(
                    f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dim)}) USING NULL"
                )
            )
            await conn.execute(text(vector_storage(table)))
    else:
        for table in ("episodes", "facts"):
            await conn.execute(text(f"UPDATE {table} SET embedding = NULL"))
    await conn.execute(text("UPDATE episodes SET passages = NULL"))
    await conn.execute(
        update(ConfigRow).where(ConfigRow.key == EMBEDDING_DIM_KEY).values(value=str(dim))
    )


async def _refresh(
    conn: AsyncConnection, model: Any, embedder: Embedder, to_text: Any, only_missing: bool
) -> int:
    done = 0
    after: tuple[str, str] | None = None
    while True:
        stmt = select(model).order_by(model.user_id, model.id).limit(_BATCH)
        if only_missing:
            stmt = stmt.where(model.embedding.is_(None))
        if after is not None:
            stmt = stmt.where(
                (model.user_id > after[0]) | ((model.user_id == after[0]) & (model.id > after[1]))
            )
        rows = (await conn.execute(stmt)).all()
        if not rows:
            return done
        texts = [to_text(r) for r in rows]
        vectors = await embed_checked(embedder, texts)
        # A row's passages are recomputed with its vector: both must be in one space.
        passages = (
            await passages_checked(embedder, texts) if model is EpisodeRow else [None] * len(rows)
        )
        for row, vector, passage in zip(rows, vectors, passages, strict=True):
            values = {"embedding": vector}
            if model is EpisodeRow:
                values["passages"] = passage
            await conn.execute(
                update(model)
                .where(model.user_id == row.user_id, model.id == row.id)
                .values(**values)
            )
        done += len(rows)
        after = (rows[-1].user_id, rows[-1].id)


async def reembed(
    engine: AsyncEngine, embedder: Embedder, *, all_rows: bool = False
) -> ReembedResult:
    """Embed rows without an embedding (or every row with ``all_rows``) using ``embedder``.

    If its width differs from the recorded one, every row is re-embedded and the
    recorded width (and Postgres column type) changes with it. If another
    embedder is recorded as having made the stored vectors, every row is
    re-embedded too. Either way ``embedder`` is recorded as the database's
    embedder (a database that recorded none adopts it). Stores opened before
    should be re-opened: they keep the embedder they were opened with.
    """
    dim = int(embedder.dim)
    identity = embedder_identity(embedder)
    async with engine.begin() as conn:
        await conn.run_sync(cross_tenant_connection, "reembed")
        recorded = int(
            await conn.scalar(select(ConfigRow.value).where(ConfigRow.key == EMBEDDING_DIM_KEY))
            or 0
        )
        previous = await conn.scalar(select(ConfigRow.value).where(ConfigRow.key == EMBEDDER_KEY))
        if dim != recorded:
            await _change_dimension(conn, dim)
            all_rows = True
        if previous is not None and previous != identity:
            all_rows = True
        await set_embedder(conn, identity)
        episodes = await _refresh(conn, EpisodeRow, embedder, _episode_text, not all_rows)
        facts = await _refresh(conn, FactRow, embedder, _fact_text, not all_rows)
        if dim != recorded and conn.dialect.name == "postgresql":
            name, table, method = VECTOR_INDEX
            await conn.execute(text(f"CREATE INDEX {name} ON {table} USING {method}"))
    # Pooled connections may have cached the old column type's statements.
    await engine.dispose()
    return ReembedResult(dim, recorded, episodes, facts, identity, previous)
