"""The LangGraph store's items: storage, TTLs and exact semantic ranking, one tenant a call.

:mod:`memstore.integrations.langgraph` adapts LangGraph's ``BaseStore`` operations
to these; this module does not import LangGraph. ``user`` is the stored user_id
and ``namespace`` the labels inside the tenant joined by ``SEPARATOR``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from memstore.core.langgraph_input import indexed_texts
from memstore.core.tenancy import TenantId
from memstore.embeddings.base import Embedder, embed_checked, queries_checked
from memstore.repositories.langgraph import LangGraphRepository
from memstore.search.settings import EmbedderGuard
from memstore.services.base import Service
from memstore.telemetry import traced_operations

if TYPE_CHECKING:
    from memstore.models import LangGraphItemRow

__all__ = ["LangGraphItems"]


@traced_operations("memstore.langgraph")
class LangGraphItems(Service):
    """Items of the LangGraph store on one database, embedded with one embedder."""

    embedder: Embedder
    embedder_guard: EmbedderGuard

    async def get(
        self, user: TenantId, namespace: str, key: str, *, refresh_ttl: bool
    ) -> LangGraphItemRow | None:
        now = self.db.now()
        async with self.db.read(user) as session:
            row = await LangGraphRepository(session=session).get(user, namespace, key, now)
        if row is not None and refresh_ttl:
            await self._refresh(user, [row], now)
        return row

    async def delete(self, user: TenantId, namespace: str, key: str) -> None:
        async with self.db.write(user) as session:
            await LangGraphRepository(session=session).delete(user, namespace, key)

    async def put(
        self,
        user: TenantId,
        namespace: str,
        key: str,
        value: dict[str, Any],
        *,
        index_fields: Sequence[str] | None,
        ttl_minutes: float | None,
    ) -> None:
        """Store ``value``, embedded by what ``index_fields`` (JSON paths) find in it."""
        paths = list(index_fields or ())
        texts = indexed_texts(value, paths) if paths else []
        vectors = None
        if texts:
            matrix = await embed_checked(self.embedder, texts)
            vectors = matrix.astype("<f4").tobytes()
        now = self.db.now()
        async with self.db.write(user) as session:
            if vectors is not None:
                # The first vector written by any path records the embedder;
                # another embedder's store refuses, as for episodes.
                await self.embedder_guard.claim(session)
            await LangGraphRepository(session=session).put(
                user,
                namespace,
                key,
                value,
                vectors=vectors,
                index_fields=None
                if vectors is None or index_fields is None
                else list(index_fields),
                now=now,
                ttl_minutes=ttl_minutes,
                expires_at=None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes),
            )

    async def search(
        self,
        user: TenantId,
        prefix: str,
        *,
        query: str | None,
        keep: Callable[[Mapping[str, Any]], bool] | None,
        offset: int,
        limit: int,
        refresh_ttl: bool,
    ) -> list[tuple[LangGraphItemRow, float | None]]:
        """Live items at or below ``prefix`` that ``keep`` keeps, with their scores.

        With a ``query``, every item is scored exactly (cosine, the best of its
        indexed fields), scored items first, best first; unscored ones follow in
        recency order. Only ranking or filtering reads every item; else SQL pages.
        """
        now = self.db.now()
        paged = not query and keep is None
        async with self.db.read(user) as session:
            rows = await LangGraphRepository(session=session).under(
                user,
                prefix,
                now,
                offset=offset if paged else 0,
                limit=limit if paged else None,
            )
        if keep is not None:
            rows = [r for r in rows if keep(r.value)]
        scores: list[float | None] = [None] * len(rows)
        if query:
            vector = (await queries_checked(self.embedder, [query]))[0]
            dim = vector.shape[0]
            for i, row in enumerate(rows):
                # Vectors of another width (re-embedded by a memstore whose reembed
                # skipped these items) leave the item unscored, not the search failed.
                if row.vectors and len(row.vectors) % (4 * dim) == 0:
                    matrix = np.frombuffer(row.vectors, dtype="<f4").reshape(-1, dim)
                    scores[i] = float((matrix @ vector).max())
            # Scored items first (best first), then unscored ones in recency order.
            order = sorted(
                range(len(rows)), key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i)
            )
            rows, scores = [rows[i] for i in order], [scores[i] for i in order]
        if not paged:
            rows, scores = rows[offset : offset + limit], scores[offset : offset + limit]
        if refresh_ttl:
            await self._refresh(user, rows, now)
        return list(zip(rows, scores, strict=True))

    async def namespaces(self, user: TenantId) -> list[str]:
        """The tenant's namespaces that hold a live item."""
        async with self.db.read(user) as session:
            return await LangGraphRepository(session=session).namespaces(user, self.db.now())

    async def sweep(self, user: TenantId) -> int:
        """Delete the tenant's expired items; returns how many."""
        async with self.db.write(user) as session:
            return await LangGraphRepository(session=session).sweep(user, self.db.now())

    async def _refresh(
        self, user: TenantId, rows: Sequence[LangGraphItemRow], now: datetime
    ) -> None:
        stale = [
            (r.namespace, r.key, now + timedelta(minutes=r.ttl_minutes))
            for r in rows
            if r.ttl_minutes is not None
        ]
        if stale:
            async with self.db.write(user) as session:
                await LangGraphRepository(session=session).refresh(user, stale, now)
