"""Recompute stored embeddings: backfill rows that have none, or switch to another embedder.

``passages=True`` also gives passages to episodes stored without them (before
migration 0011, or by an embedder without passages) while keeping their vectors.

Switching to an embedder of another width changes the recorded dimension and, where
the backend has vector columns, their type and index (its
:meth:`~memstore.dialects.Dialect.change_vector_width`), in one transaction with the
recomputed vectors; nothing else in the schema is touched.

Every row that holds a vector is covered: episodes (and their passages), facts, and
the LangGraph store's items, whose vectors are recomputed from the fields recorded
with them (``langgraph_items.index_fields``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select, text, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memstore.core.documents import episode_text, fact_text
from memstore.core.langgraph_input import indexed_texts
from memstore.db.crosstenant import cross_tenant_connection
from memstore.dialects import dialect_for
from memstore.embeddings.base import (
    Embedder,
    PassageEmbedder,
    check_dim,
    embed_checked,
    embed_with_passages_checked,
    passages_checked,
)
from memstore.embeddings.forms import drops_forms, form_options
from memstore.embeddings.identity import embedder_identity
from memstore.errors import EmbedderFormsDropped, InvalidInput
from memstore.models import ConfigRow, EpisodeRow, FactRow, LangGraphItemRow
from memstore.models.config import EMBEDDER_KEY, EMBEDDING_DIM_KEY
from memstore.models.search import VECTOR_TABLES
from memstore.search.settings import set_embedder
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
    # LangGraph store items whose vectors were recomputed.
    langgraph_items: int = 0


def _recorded_dim(value: str | None) -> int:
    """The recorded width; 0 when none or not a number (re-embedding every row sets it)."""
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _episode_text(row: Any) -> str:
    return episode_text(Episode(session_id=row.session_id, input=row.input, output=row.output))


def _fact_text(row: Any) -> str:
    return fact_text(Fact(subject=row.subject, predicate=row.predicate, object=row.object))


async def _change_dimension(conn: AsyncConnection, dim: int) -> list[str]:
    """Change the vector width (the backend's column type, or its vectors emptied); what
    the backend must still finish once this transaction commits."""
    pending = await dialect_for(conn).change_vector_width(conn, dim, VECTOR_TABLES)
    await conn.execute(text("UPDATE episodes SET passages = NULL"))
    await conn.execute(
        update(ConfigRow).where(ConfigRow.key == EMBEDDING_DIM_KEY).values(value=str(dim))
    )
    return pending


async def _batches(
    conn: AsyncConnection, stmt: Select[*tuple[Any, ...]], keys: tuple[Any, ...]
) -> AsyncIterator[Any]:
    """The rows of ``stmt`` in the order of the primary-key columns ``keys``, ``_BATCH``
    at a time (``stmt`` must select those columns).

    Pages by key rather than by offset, so rows updated out of the filter while
    paging shift nothing.
    """
    after: tuple[Any, ...] | None = None
    names = [key.key for key in keys]
    stmt = stmt.order_by(*keys).limit(_BATCH)
    while True:
        page = stmt if after is None else stmt.where(_after(keys, after))
        rows = (await conn.execute(page)).all()
        if not rows:
            return
        yield rows
        after = tuple(getattr(rows[-1], name) for name in names)


def _after(keys: tuple[Any, ...], last: tuple[Any, ...]) -> ColumnElement[bool]:
    """Rows whose key sorts after ``last`` (a row-value comparison, on both backends)."""
    return tuple_(*keys) > tuple_(*last)


async def _refresh(
    conn: AsyncConnection, model: Any, embedder: Embedder, to_text: Any, only_missing: bool
) -> int:
    done = 0
    stmt = select(model)
    if only_missing:
        stmt = stmt.where(model.embedding.is_(None))
    async for rows in _batches(conn, stmt, (model.user_id, model.id)):
        texts = [to_text(r) for r in rows]
        # A row's passages are recomputed with its vector: both must be in one space.
        if model is EpisodeRow:
            vectors, passages = await embed_with_passages_checked(embedder, texts)
        else:
            vectors, passages = await embed_checked(embedder, texts), [None] * len(rows)
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
    async for rows in _batches(conn, stmt, (EpisodeRow.user_id, EpisodeRow.id)):
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


_Item = LangGraphItemRow


async def _check_langgraph_fields(conn: AsyncConnection) -> None:
    """Refuse, before anything changes, items whose vectors could not be recomputed."""
    unknown = await conn.scalar(
        select(func.count())
        .select_from(_Item)
        .where(_Item.vectors.is_not(None), _Item.index_fields.is_(None))
    )
    if unknown:
        raise InvalidInput(
            f"{unknown} LangGraph item(s) hold vectors but were indexed before memstore "
            "recorded which fields an item is indexed on (migration 0012), so reembed "
            "cannot compute their vectors again and would leave them in the old "
            "embedder's space. Put them again through MemstoreStore with the store's "
            "current embedder (that records their fields), or delete them, then run "
            "reembed again; nothing was changed"
        )


async def _refresh_langgraph(conn: AsyncConnection, embedder: Embedder) -> int:
    """Recompute every indexed LangGraph item's vectors from its recorded fields."""
    done = 0
    keys = (_Item.user_id, _Item.namespace, _Item.key)
    stmt = select(*keys, _Item.value, _Item.index_fields).where(_Item.index_fields.is_not(None))
    async for rows in _batches(conn, stmt, keys):
        texts = [indexed_texts(r.value, r.index_fields) for r in rows]
        flat = [t for item in texts for t in item]
        matrix = await embed_checked(embedder, flat) if flat else None
        start = 0
        for row, item in zip(rows, texts, strict=True):
            vectors = None
            if item and matrix is not None:
                vectors = matrix[start : start + len(item)].astype("<f4").tobytes()
                start += len(item)
            await conn.execute(
                update(_Item)
                .where(
                    _Item.user_id == row.user_id,
                    _Item.namespace == row.namespace,
                    _Item.key == row.key,
                )
                .values(vectors=vectors, index_fields=row.index_fields if vectors else None)
            )
        done += len(rows)
    return done


async def reembed(
    engine: AsyncEngine,
    embedder: Embedder,
    *,
    all_rows: bool = False,
    passages: bool = False,
    drop_forms: bool = False,
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

    An embedder without the query and document forms the recorded one has (e5's
    ``query:``, an endpoint's ``input_type``...) is :class:`EmbedderFormsDropped`, and
    nothing changes, unless ``drop_forms``: the stores opened with the forms would
    be refused from then on.
    """
    if passages and not isinstance(embedder, PassageEmbedder):
        raise InvalidInput(
            f"{embedder!r} computes no passages; pass an embedder with embed_passages "
            "(e.g. SentenceTransformerEmbedder) or leave passages off"
        )
    # Refused before anything changes: a width the vector column, its index or a later
    # open could not take would leave a database no store can open.
    dim = check_dim(embedder.dim, what=f"the width of {embedder!r}")
    identity = embedder_identity(embedder)
    distributed: list[str] = []
    async with engine.begin() as conn:
        await conn.run_sync(cross_tenant_connection, "reembed")
        recorded = _recorded_dim(
            await conn.scalar(select(ConfigRow.value).where(ConfigRow.key == EMBEDDING_DIM_KEY))
        )
        previous = await conn.scalar(select(ConfigRow.value).where(ConfigRow.key == EMBEDDER_KEY))
        if previous is not None and not drop_forms and drops_forms(previous, identity):
            raise EmbedderFormsDropped(previous, identity, form_options(previous))
        if dim != recorded or (previous is not None and previous != identity):
            all_rows = True
        if all_rows:
            await _check_langgraph_fields(conn)
        if dim != recorded:
            distributed = await _change_dimension(conn, dim)
        await set_embedder(conn, identity)
        episodes = await _refresh(conn, EpisodeRow, embedder, _episode_text, not all_rows)
        facts = await _refresh(conn, FactRow, embedder, _fact_text, not all_rows)
        # An item is stored with its vectors or not indexed at all: none is missing
        # a vector, so only a full refresh has items to recompute.
        items = await _refresh_langgraph(conn, embedder) if all_rows else 0
        # After a full refresh every row has its passages already.
        filled = await _backfill_passages(conn, embedder) if passages and not all_rows else 0
        if dim != recorded:
            await dialect_for(conn).build_vector_index(conn)
    await dialect_for(engine).vector_width_committed(engine, distributed)
    # Pooled connections may have cached the old column type's statements.
    await engine.dispose()
    return ReembedResult(dim, recorded, episodes, facts, identity, previous, filled, items)
