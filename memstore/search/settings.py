"""Deployment settings recorded in the database (``memstore_config``).

The embedder identity is recorded by the first transaction that writes a vector
(``claim_embedder``), not by migrations or at open: a store that never embeds
(``memstore gc``, an export) leaves a fresh database free for whichever embedder
writes first. A database from before identities were recorded adopts the first
embedder that writes to it (or that ``memstore reembed`` runs with).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from memstore.db.upsert import insert_for
from memstore.embeddings.base import MAX_DIM, MIN_DIM, width_or_none
from memstore.embeddings.forms import form_options
from memstore.errors import ConfigurationError, DimensionMismatch, EmbedderMismatch
from memstore.models import ConfigRow
from memstore.models.config import EMBEDDER_KEY, EMBEDDING_DIM_KEY

__all__ = [
    "check_embedder",
    "claim_embedder",
    "recorded_embedder",
    "recorded_embedding_dim",
    "recorded_settings",
    "set_embedder",
]


async def recorded_settings(engine: AsyncEngine) -> tuple[int, str | None]:
    """The recorded embedding width and embedder identity (None if none recorded yet)."""
    async with engine.connect() as conn:
        result = await conn.execute(
            select(ConfigRow.key, ConfigRow.value).where(
                ConfigRow.key.in_([EMBEDDING_DIM_KEY, EMBEDDER_KEY])
            )
        )
        rows = {key: value for key, value in result.all()}
    raw = rows.get(EMBEDDING_DIM_KEY)
    if raw is None:
        raise DimensionMismatch("the database records no embedding dimension; run migrations")
    try:
        dim = width_or_none(int(raw))
    except ValueError:
        dim = None
    if dim is None:
        raise ConfigurationError(
            f"this database records embedding width {raw!r}, which no store can use (a "
            f"width is {MIN_DIM} to {MAX_DIM}); set a valid one with `memstore reembed "
            "--embedder NAME` (and --embedder-dim N for hashing or openai), which "
            "re-embeds every row",
            setting="embedding_dim",
        )
    return dim, rows.get(EMBEDDER_KEY)


async def recorded_embedding_dim(engine: AsyncEngine) -> int:
    """The embedding width fixed when the database was migrated (or last re-embedded)."""
    return (await recorded_settings(engine))[0]


async def recorded_embedder(bind: AsyncEngine | AsyncConnection) -> str | None:
    """Identity of the embedder whose vectors the database holds; None if none recorded.

    Read on ``bind`` (a connection: in its transaction)."""
    query = select(ConfigRow.value).where(ConfigRow.key == EMBEDDER_KEY)
    if isinstance(bind, AsyncConnection):
        return await bind.scalar(query)
    async with bind.connect() as conn:
        return await conn.scalar(query)


def check_embedder(recorded: str | None, identity: str, *, allow_change: bool = False) -> None:
    """Refuse an embedder other than the recorded one, unless the caller opted in."""
    if recorded is not None and recorded != identity and not allow_change:
        raise EmbedderMismatch(recorded, identity, form_options(recorded))


async def claim_embedder(
    session: AsyncSession, identity: str, *, allow_change: bool = False
) -> bool:
    """Inside a transaction about to write vectors: record ``identity`` if none is, else check.

    The insert is a no-op when another transaction recorded first (Postgres
    waits for it on the primary key, SQLite writers are serial), and the value
    is read back, so two stores with different embedders can never both write.
    Returns True when the recorded identity was already committed (callers may
    then stop checking); False when this transaction recorded it (a rollback
    would undo that).
    """
    recorded = await session.scalar(select(ConfigRow.value).where(ConfigRow.key == EMBEDDER_KEY))
    committed = recorded is not None
    if recorded is None:
        insert = insert_for(session)
        await session.execute(
            insert(ConfigRow).values(key=EMBEDDER_KEY, value=identity).on_conflict_do_nothing()
        )
        recorded = await session.scalar(
            select(ConfigRow.value).where(ConfigRow.key == EMBEDDER_KEY)
        )
    check_embedder(recorded, identity, allow_change=allow_change)
    return committed


async def set_embedder(conn: AsyncConnection, identity: str) -> None:
    """Record ``identity`` as the embedder of every stored vector (after a re-embed)."""
    insert = insert_for(conn)
    stmt = insert(ConfigRow).values(key=EMBEDDER_KEY, value=identity)
    await conn.execute(
        stmt.on_conflict_do_update(index_elements=[ConfigRow.key], set_={"value": identity})
    )


class EmbedderGuard:
    """Records this store's embedder with the first vectors it writes, else refuses.

    Call :meth:`claim` in every transaction that writes vectors, before writing
    them. Once the recorded identity was seen committed, later transactions of
    this store skip the query.
    """

    def __init__(self, identity: str, *, allow_change: bool = False) -> None:
        self.identity = identity
        self.allow_change = allow_change
        self._checked = False

    async def claim(self, session: AsyncSession) -> None:
        if not self._checked:
            self._checked = await claim_embedder(
                session, self.identity, allow_change=self.allow_change
            )
