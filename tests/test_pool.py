"""The engine's pool: a busy store keeps its connections, a quiet one lets the extra ones go.

Connections are counted with the pool's ``connect`` event; the pool's clock is
held still or moved by hand, so nothing here depends on how fast the run is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import NullPool

from memstore import Episode, MemoryStore
from memstore.db.engine import pool_capacity
from memstore.db.pool import KeepingPool
from tests.store_parts import store_with_parts


class HandClock:
    """The pool's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def keeping_pool(engine: AsyncEngine) -> KeepingPool:
    pool = engine.sync_engine.pool
    assert isinstance(pool, KeepingPool), type(pool)
    return pool


@contextmanager
def counted_connects(engine: AsyncEngine) -> Iterator[list[int]]:
    """New connections the pool opens meanwhile (one entry per connect)."""
    opened: list[int] = []

    def connected(*_: Any) -> None:
        opened.append(1)

    event.listen(engine.sync_engine, "connect", connected)
    try:
        yield opened
    finally:
        event.remove(engine.sync_engine, "connect", connected)


async def hold_at_once(engine: AsyncEngine, n: int) -> None:
    """Check out ``n`` connections at the same time, then return them all."""
    async with AsyncExitStack() as stack:
        for _ in range(n):
            await stack.enter_async_context(engine.connect())


async def turns(store: MemoryStore, agents: int, *, tag: str) -> None:
    """``agents`` concurrent turns, one per tenant: context() (four reads at once), remember()."""

    async def turn(i: int) -> None:
        user = f"{tag}-{i}"
        await store.context(user_id=user, session_id="s", query="where does the orchid grow")
        await store.remember(
            Episode(user_id=user, session_id="s", input="orchid on the sill", output="noted")
        )

    await asyncio.gather(*(turn(i) for i in range(agents)))


async def test_a_busy_store_opens_no_connection_after_warm_up(db_url: str) -> None:
    async with store_with_parts(db_url) as parts:
        engine, store = parts.engine, parts.store
        pool = keeping_pool(engine)
        pool.clock = HandClock()  # time stands still: the store never counts as quiet
        capacity = pool_capacity(engine)
        assert capacity == 15
        await hold_at_once(engine, capacity)
        # Every connection opened for the burst stayed in the pool.
        assert pool.checkedin() == capacity
        with counted_connects(engine) as opened:
            for round_ in range(3):
                await turns(store, 3 * capacity, tag=f"r{round_}")
                assert pool.open_connections() <= capacity
        assert opened == []
        assert pool.open_connections() == capacity


async def test_a_quiet_store_closes_the_extra_connections_as_they_come_back(db_url: str) -> None:
    async with store_with_parts(db_url) as parts:
        engine, store = parts.engine, parts.store
        pool = keeping_pool(engine)
        clock = HandClock()
        pool.clock = clock
        await hold_at_once(engine, 15)
        await store.working(user_id="quiet")
        assert pool.open_connections() == 15  # still within the busy window
        clock.now += pool.idle_s
        for _ in range(20):  # one connection at a time: each returned extra one is closed
            await store.working(user_id="quiet")
        assert pool.open_connections() == 5
        with counted_connects(engine) as opened:
            await hold_at_once(engine, 15)
        assert len(opened) == 10  # the bound holds: 5 kept, 10 opened again
        assert pool.open_connections() == 15


async def test_engine_options_still_size_the_pool(db_url: str) -> None:
    async with store_with_parts(db_url, engine_options={"pool_size": 2, "max_overflow": 1}) as p:
        pool = keeping_pool(p.engine)
        assert pool_capacity(p.engine) == 3
        assert pool.kept == 2
        await hold_at_once(p.engine, 3)
        assert pool.open_connections() == 3
    async with store_with_parts(db_url, engine_options={"poolclass": NullPool}) as p:
        assert isinstance(p.engine.sync_engine.pool, NullPool)
        assert pool_capacity(p.engine) is None
        await p.store.working(user_id="u")


async def test_recreating_the_pool_keeps_its_split(db_url: str) -> None:
    async with store_with_parts(db_url) as parts:
        engine = parts.engine
        await engine.dispose()  # recreates the pool
        pool = keeping_pool(engine)
        assert (pool.kept, pool_capacity(engine)) == (5, 15)
