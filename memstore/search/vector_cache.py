"""SQLite: each tenant's episode vectors as one in-process matrix, checked against a version.

SQLite has no vector index, and reading a tenant's embedding blobs on every
query costs more than scoring them. So the matrix is built once and reused
while the tenant's *search version* is unchanged. Triggers on ``episodes``
(migration 0008) give the tenant a new random version on every insert, update
and delete, in the writing transaction, so a reader in any process sees a
version that matches the rows its own snapshot sees: a stale matrix is never
used, whichever process wrote.

Memory is bounded by ``max_rows`` over all cached tenants (least recently used
tenants are dropped first); ``forget`` drops a tenant at once.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.db.unit import Reader
from memstore.dialects import dialect_for
from memstore.models import EpisodeRow
from memstore.search.tables import corpus_size

__all__ = ["DEFAULT_CACHED_ROWS", "TenantVectors", "VectorCache", "forget_search_version"]

DEFAULT_CACHED_ROWS = 200_000


@dataclass(frozen=True)
class TenantVectors:
    version: int | None
    ids: list[str]
    matrix: np.ndarray  # float32, one unit-length row per id
    occurred: np.ndarray  # float64 seconds since the epoch (UTC), per id
    rows: int  # all the tenant's episodes, with or without a vector (BM25's corpus size)
    typical_chars: float  # their median searchable text length (BM25's typical length)
    # Long episodes' passage vectors (unit length), and the index in ``ids`` of each one's episode.
    passages: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    passage_owners: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))

    @property
    def size(self) -> int:
        """Vectors held (the cache's memory budget counts these)."""
        return len(self.ids) + len(self.passage_owners)

    def nearest(
        self,
        query: np.ndarray,
        depth: int,
        time_range: tuple[datetime, datetime] | None,
        pool: int | None = None,
        margin: float = 0.0,
    ) -> list[tuple[str, float]]:
        """(id, cosine) of the ``depth`` rows most similar to ``query``, best first.

        Of the ``pool`` rows most similar by whole text (all rows when None), a
        row's cosine is that of its whole text or of its best passage less
        ``margin``, whichever is higher.
        """
        if not self.ids:
            return []
        q = query.astype(np.float32)
        sims = self.matrix @ q
        if time_range is not None:
            lo, hi = (t.timestamp() for t in time_range)
            sims = np.where((self.occurred >= lo) & (self.occurred <= hi), sims, -np.inf)
        if len(self.passage_owners):
            best = _top(sims, len(self.ids) if pool is None else max(pool, depth))
            best = best[np.isfinite(sims[best])]  # never lift a row the time range excludes
            scored = np.zeros(len(self.ids), dtype=bool)
            scored[best] = True
            mine = scored[self.passage_owners]
            if mine.any():
                np.maximum.at(sims, self.passage_owners[mine], self.passages[mine] @ q - margin)
        top = _top(sims, depth)
        top = top[np.isfinite(sims[top])]
        # tolist() converts in C; indexing numpy scalars one by one cost 0.5 ms per recall.
        return list(zip([self.ids[i] for i in top.tolist()], sims[top].tolist(), strict=True))


def _top(sims: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest values, best first (ties: lower index first)."""
    take = min(k, len(sims))
    top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(take)
    return top[np.lexsort((top, -sims[top]))]


class VectorCache:
    def __init__(self, *, max_rows: int = DEFAULT_CACHED_ROWS) -> None:
        self.max_rows = max_rows
        self._tenants: OrderedDict[str, TenantVectors] = OrderedDict()
        self._rows = 0

    async def vectors(self, session: Reader, user_id: str) -> TenantVectors:
        """The tenant's vectors as of ``session``'s snapshot (from the cache when current)."""
        version = await _version(session, user_id)
        cached = self._tenants.get(user_id)
        if cached is not None and cached.version == version and version is not None:
            self._tenants.move_to_end(user_id)
            return cached
        fresh = await _load(session, user_id, version)
        self.drop(user_id)
        if version is not None and fresh.size <= self.max_rows:
            self._tenants[user_id] = fresh
            self._rows += fresh.size
            while self._rows > self.max_rows:
                _, evicted = self._tenants.popitem(last=False)
                self._rows -= evicted.size
        return fresh

    def drop(self, user_id: str) -> None:
        gone = self._tenants.pop(user_id, None)
        if gone is not None:
            self._rows -= gone.size


async def _version(session: Reader, user_id: str) -> int | None:
    value = await session.scalar(
        text("SELECT version FROM search_versions WHERE user_id = :u AND tbl = 'episodes'"),
        {"u": user_id},
    )
    return None if value is None else int(value)


async def _load(session: Reader, user_id: str, version: int | None) -> TenantVectors:
    stmt = select(
        EpisodeRow.id, EpisodeRow.embedding, EpisodeRow.occurred_at, EpisodeRow.passages
    ).where(EpisodeRow.user_id == user_id, EpisodeRow.embedding.is_not(None))
    rows = (await session.execute(stmt)).all()
    count, middle = await corpus_size(session, user_id)
    if not rows:
        return TenantVectors(version, [], np.zeros((0, 0), np.float32), np.zeros(0), count, middle)
    matrix = np.stack([np.asarray(r[1], dtype=np.float32) for r in rows])
    # Passages of another width (left by an embedder switch) are not comparable; skip them.
    long = [
        (i, r[3])
        for i, r in enumerate(rows)
        if r[3] is not None and r[3].shape[1:] == matrix.shape[1:]
    ]
    passages = (
        np.concatenate([p for _, p in long]) if long else np.zeros((0, matrix.shape[1]), np.float32)
    )
    owners = np.concatenate([np.full(len(p), i, np.intp) for i, p in long]) if long else None
    return TenantVectors(
        version,
        [r[0] for r in rows],
        matrix,
        np.array([r[2].timestamp() for r in rows], dtype=np.float64),
        count,
        middle,
        passages.astype(np.float32),
        owners if owners is not None else np.zeros(0, np.intp),
    )


async def forget_search_version(session: AsyncSession, user_id: str) -> None:
    """Erase the tenant's search version (SQLite; Postgres keeps none)."""
    if dialect_for(session).vectors_in_process:
        await session.execute(
            text("DELETE FROM search_versions WHERE user_id = :u"), {"u": user_id}
        )
