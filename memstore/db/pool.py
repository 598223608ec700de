"""The connection pool memstore's engines use: a busy store keeps the connections it needs.

SQLAlchemy's queue pool keeps ``pool_size`` connections and closes every one of
the ``max_overflow`` extra connections the moment it is returned. memstore runs
several statements of one call concurrently (``context()`` reads on four
connections at once), so a store serving more than a handful of calls at a time
opened and closed connections all the time (on Postgres each new connection
also runs asyncpg's type introspection for the pgvector codec).

:class:`KeepingPool` has the same bound (``pool_size + max_overflow``
connections at once) and keeps ``pool_size`` connections as that pool does. The
extra ones are kept too while the store still needs them: a connection returned
while more than ``pool_size`` were in use within the last
:data:`OVERFLOW_IDLE_S` seconds goes back into the pool; once the store has
needed no more than ``pool_size`` for that long, each extra one is closed when
it is next returned (the pool hands connections out oldest first, so they all
come back soon under any load). A store that receives no calls at all closes
nothing until its next call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry

__all__ = ["OVERFLOW_IDLE_S", "KeepingPool"]

# How long a store must have needed no more than pool_size connections before
# it lets the extra ones go: longer than the pauses within a burst of traffic,
# short enough that a quiet store soon holds no more than pool_size.
OVERFLOW_IDLE_S = 60.0


class KeepingPool(AsyncAdaptedQueuePool):
    """An asyncio queue pool that keeps its overflow connections while the store is busy."""

    def __init__(
        self,
        creator: Any,
        pool_size: int = 5,
        max_overflow: int = 10,
        **kw: Any,
    ) -> None:
        if pool_size <= 0 or max_overflow < 0:
            # No fixed bound (pool_size 0, or unlimited overflow): the queue pool as it is.
            super().__init__(creator, pool_size=pool_size, max_overflow=max_overflow, **kw)
            self.kept: int | None = None
        else:
            # Room in the queue for every connection the bound allows, so a returned
            # overflow connection can stay; size() is then the whole bound.
            super().__init__(creator, pool_size=pool_size + max_overflow, max_overflow=0, **kw)
            self.kept = pool_size
        self.idle_s = OVERFLOW_IDLE_S
        self.clock: Callable[[], float] = time.monotonic
        # When more than ``kept`` connections were last in use at once.
        self._busy_at = float("-inf")

    def open_connections(self) -> int:
        """Connections open now, in use or idle in the pool."""
        return self.checkedout() + self.checkedin()

    def _do_get(self) -> ConnectionPoolEntry:
        record = super()._do_get()
        if self.kept is not None and self.checkedout() > self.kept:
            self._busy_at = self.clock()
        return record

    def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
        kept = self.kept
        if (
            kept is not None
            and self.open_connections() > kept
            and self.clock() - self._busy_at >= self.idle_s
        ):
            try:
                record.close()
            finally:
                self._dec_overflow()
            return
        super()._do_return_conn(record)

    def recreate(self) -> KeepingPool:
        fresh = super().recreate()
        assert isinstance(fresh, KeepingPool)
        if self.kept is not None:
            # super() passed the whole bound as pool_size; keep the same split.
            fresh.kept = self.kept
        fresh.idle_s = self.idle_s
        fresh.clock = self.clock
        return fresh
