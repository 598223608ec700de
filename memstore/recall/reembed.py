"""Recompute stored embeddings: backfill rows that have none, or switch to another embedder.

``passages=True`` also gives passages to episodes stored without them (before
migration 0011, or by an embedder without passages) while keeping their vectors.

Switching to an embedder of another width changes the recorded dimension and, on
Postgres, the column type (``vector(n)``) and its HNSW index, in one transaction with
the recomputed vectors; nothing else in the schema is touched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memstore.db.crosstenant import cross_tenant_connection
from memstore.documents import episode_text, fact_text
from memstore.embeddings.base import Embedder, PassageEmbedder, embed_checked, passages_checked
from memstore.embeddings.identity import embedder_identity
from memstore.errors import InvalidInput
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
    # Episodes that kept their vector and were given passages (``passages=True``).
    passages: int = 0


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


async def _batches(
    conn: AsyncConnection, stmt: Select[*tuple[Any, ...]], model: Any
) -> AsyncIterator[Any]:
    """The rows of ``stmt`` in ``(user_id, id)`` order, ``_BATCH`` at a time.

    Pages by key rather than by offset, so rows updated out of the filter while
    paging shift nothing.
    """
    after: tuple[str, str] | None = None
    stmt = stmt.order_by(model.user_id, model.id).limit(_BATCH)
    while True:
        page = stmt
        if after is not None:
            page = stmt.where(
                (model.user_id > after[0]) | ((model.user_id == after[0]) & (model.id > after[1]))
            )
        rows = (await conn.execute(page)).all()
        if not rows:
            return
        yield rows
        after = (rows[-1].user_id, rows[-1].id)


async def _refresh(
    conn: AsyncConnection, model: Any, embedder: Embedder, to_text: Any, only_missing: bool
) -> int:
    done = 0
    stmt = select(model)
    if only_missing:
        stmt = stmt.where(model.embedding.is_(None))
    async for rows in _batches(conn, stmt, model):
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
    return done


async def _backfill_passages(conn: AsyncConnection, embedder: Embedder) -> int:
    """Passages for episodes that have a vector but none; returns how many got some.

    Every such row is read (a short text has none, and only the tokenizer can tell),
    but only long texts cost a model pass.
    """
    filled = 0
    text_of = (EpisodeRow.session_id, EpisodeRow.input, EpisodeRow.output)
    stmt = select(EpisodeRow.user_id, EpisodeRow.id, *text_of).where(
        EpisodeRow.embedding.is_not(None), EpisodeRow.passages.is_(None)
    )
    async for rows in _batches(conn, stmt, EpisodeRow):
        passages = await passages_checked(embedder, [_episode_text(r) for r in rows])
        for row, found in zip(rows, passages, strict=True):
            if found is None:
                continue
            await conn.execute(
                update(EpisodeRow)
                .where(EpisodeRow.user_id == row.user_id, EpisodeRow.id == row.id)
                .values(passages=found)
            )
            filled += 1
    return filled


async def reembed(
    engine: AsyncEngine, embedder: Embedder, *, all_rows: bool = False, passages: bool = False
) -> ReembedResult:
    """Embed rows without an embedding (or every row with ``all_rows``) using ``embedder``.

    ``passages`` also computes the passages of episodes that have a vector but no
    passages, leaving their vectors as they are: the way to give long episodes
    stored before passages existed their passages without re-embedding every row.
    ``embedder`` must then be a :class:`PassageEmbedder`.

    If its width differs from the recorded one, every row is re-embedded and the
    recorded width (and Postgres column type) changes with it. If another
    embedder is recorded as having made the stored vectors, every row is
    re-embedded too. Either way ``embedder`` is recorded as the database's
    embedder (a database that recorded none adopts it). Stores opened before
    should be re-opened: they keep the embedder they were opened with.
    """
    if passages and not isinstance(embedder, PassageEmbedder):
        raise InvalidInput(
            f"{embedder!r} computes no passages; pass an embedder with embed_passages "
            "(e.g. SentenceTransformerEmbedder) or leave passages off"
        )
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
        # After a full refresh every row has its passages already.
        filled = await _backfill_passages(conn, embedder) if passages and not all_rows else 0
        if dim != recorded and conn.dialect.name == "postgresql":
            name, table, method = VECTOR_INDEX
            await conn.execute(text(f"CREATE INDEX {name} ON {table} USING {method}"))
    # Pooled connections may have cached the old column type's statements.
    await engine.dispose()
    return ReembedResult(dim, recorded, episodes, facts, identity, previous, filled)
