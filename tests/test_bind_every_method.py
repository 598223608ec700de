"""Every public method works on a store bound to the caller's session (``store.bind``).

Each method (the store's, ``threads``' and working memory's; tests/bound_cases.py)
is called in the caller's fresh transaction, as its first statement or (SQLite)
after the application's own row: it must work (or, by its nature, raise
:class:`~memstore.Unsupported`), never a raw SQLAlchemy error; what it writes must
be in the caller's transaction (visible through the session) and gone with its
rollback; and the session must stay usable. A public method added without a case
fails :func:`test_every_public_method_has_a_case`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, select
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlalchemy.ext.asyncio import create_async_engine as create_app_engine

from memstore import Episode, MemoryStore, Unsupported
from memstore.db.engine import resolve_url
from tests.bound_cases import CASES, NOT_CALLED, USER, Seeded, public_names, seed
from tests.conftest import ManualClock, is_postgres
from tests.store_parts import store_with_parts, tenant_rows

app_metadata = MetaData()
ledger = Table("app_ledger", app_metadata, Column("id", Integer, primary_key=True))


async def _settle(result: Any) -> Any:
    """The call's value: awaited, or every item of an async iterator."""
    if asyncio.iscoroutine(result):
        return await result
    if isinstance(result, AsyncIterator):
        return [item async for item in result]
    return result


async def _first(result: Any) -> Any:
    """Awaited, or an async iterator's first item (a live feed has no last)."""
    if isinstance(result, AsyncIterator):
        try:
            return await anext(result)
        finally:
            await result.aclose()  # type: ignore[attr-defined]
    return await _settle(result)


def test_every_public_method_has_a_case() -> None:
    missing = public_names() - set(CASES) - set(NOT_CALLED)
    stale = set(CASES) - public_names()
    assert not missing, f"public methods without a bound-store case: {sorted(missing)}"
    assert not stale, f"cases of methods that are gone: {sorted(stale)}"


@pytest.fixture
async def app_engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    """The application's own engine (none of memstore's hooks), with a table of its own."""
    engine = create_app_engine(resolve_url(db_url))
    async with engine.begin() as conn:
        await conn.run_sync(app_metadata.drop_all)
        await conn.run_sync(app_metadata.create_all)
    try:
        yield engine
    finally:
        async with engine.begin() as conn:
            await conn.run_sync(app_metadata.drop_all)
        await engine.dispose()


@pytest.mark.parametrize("first", ["memstore", "application"])
@pytest.mark.parametrize("name", sorted(CASES))
async def test_each_public_method_on_a_bound_store(
    db_url: str, backend: str, app_engine: AsyncEngine, name: str, first: str
) -> None:
    """``first``: whose write the caller's transaction begins with. memstore's own
    (its statements open the transaction), or the application's row (on SQLite the
    transaction then holds the database's one write lock during the call)."""
    if first == "application" and is_postgres(backend):
        pytest.skip("on Postgres the application's row locks nothing memstore uses")
    case = CASES[name]
    clock = ManualClock()
    async with MemoryStore.open(db_url, clock=clock) as store:
        async with async_sessionmaker(app_engine, expire_on_commit=False)() as session:
            seeded: Seeded = await seed(store, clock, session)
            async with app_engine.connect() as conn:
                before = await tenant_rows(conn)
            # No pooled connection: the session's first operation has to make one.
            await app_engine.dispose()
            await session.begin()
            if first == "application":
                await session.execute(ledger.insert().values(id=1))
            view = store.bind(session)
            if case.refused:
                with pytest.raises(Unsupported) as refused:
                    await _first(case.call(view, seeded))
                assert "store.bind" in str(refused.value)
            else:
                result = await _settle(case.call(view, seeded))
                if case.check is not None:
                    assert case.check(result, seeded), f"{name} returned {result!r}"
            # The session still works, and holds exactly what the method wrote.
            inside = await tenant_rows(session)
            if case.writes:
                assert inside != before, f"{name} wrote nothing into the transaction"
            else:
                assert inside == before, f"{name} changed rows"
            await session.rollback()
        async with app_engine.connect() as conn:
            assert await tenant_rows(conn) == before, "the rollback left rows behind"
            assert (await conn.execute(select(ledger))).all() == []


async def test_gathered_calls_take_turns_on_the_callers_session(
    db_url: str, app_engine: AsyncEngine
) -> None:
    """Concurrent calls of a bound store, the first of the session's and nested in a
    call that holds its transaction open, share the one session without a clash."""
    async with MemoryStore.open(db_url) as store:
        episode = await store.remember(
            Episode(user_id=USER, session_id="s1", input="I ordered a brass lamp")
        )
        # No pooled connection: the session's first operation has to make one.
        await app_engine.dispose()
        async with async_sessionmaker(app_engine)() as session, session.begin():
            view = store.bind(session)
            found, blocks, context = await asyncio.gather(
                view.recall("brass lamp", user_id=USER),
                view.working(user_id=USER),
                view.context(user_id=USER, session_id="s1", query="lamp"),
            )
            assert [e.id for e in found] == [episode]
            assert blocks == []
            assert f"episode:{episode}" in context.ids
            # While export_stream holds its transaction open, this task's own
            # calls (the context's four concurrent reads among them) go on.
            seen = []
            async for table, _row in view.export_stream(user_id=USER):
                seen.append(table)
                inner = await view.context(user_id=USER, query="lamp")
                assert f"episode:{episode}" in inner.ids
            assert "episodes" in seen


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_bound_forget_does_not_wait_for_a_flush_behind_the_callers_lock(
    db_url: str, app_engine: AsyncEngine
) -> None:
    """A background flush of access counts waits for the caller's write lock (SQLite
    has one); a forget in the caller's transaction must not wait for that flush."""
    options = {"sqlite_busy_timeout_ms": 60_000}
    async with store_with_parts(db_url, engine_options=options) as parts:
        store = parts.store
        episode = await store.remember(Episode(user_id=USER, session_id="s1", input="a lamp"))
        async with async_sessionmaker(app_engine)() as session:
            await session.begin()
            await session.execute(ledger.insert().values(id=1))
            # Enough accesses for a background flush, which now waits for the lock.
            store.record_access("episode", [episode] * 256, user_id=USER)
            (flush,) = [
                t
                for t in asyncio.all_tasks()
                if t.get_coro().__qualname__.endswith("_background_flush")  # type: ignore[union-attr]
            ]
            await asyncio.sleep(0)  # the flush's first step: it takes the counts
            assert parts.tracker.pending(USER, "episode", [episode]) == {}
            assert await store.bind(session).forget(user_id=USER) > 0
            assert not flush.done()
            await session.rollback()
        assert await parts.tracker.background_flush_done()
        # The rollback kept the episode, so the flush counted its accesses.
        assert await store.access_counts("episode", [episode], user_id=USER) == {episode: 256}
