"""store.bind(session): memstore's writes join the application's own transaction.

The session comes from the application's own engine (plain
``create_async_engine`` on the same URL, none of memstore's connection hooks),
so the vector and JSON columns must bind and read back on it too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from memstore import Conflict, Episode, Fact, InvalidInput, MemoryStore, MemstoreError
from memstore.db.engine import resolve_url
from tests.conftest import is_postgres

app_metadata = MetaData()
orders = Table(
    "app_orders",
    app_metadata,
    Column("id", Integer, primary_key=True),
    Column("item", String(100), nullable=False),
)

MARCH = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
async def app_engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(resolve_url(db_url))
    async with engine.begin() as conn:
        await conn.run_sync(app_metadata.drop_all)
        await conn.run_sync(app_metadata.create_all)
    try:
        yield engine
    finally:
        async with engine.begin() as conn:
            await conn.run_sync(app_metadata.drop_all)
        await engine.dispose()


async def _write_both(store: MemoryStore, engine: AsyncEngine, *, commit: bool) -> str:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as session:
        await session.begin()
        await session.execute(orders.insert().values(id=1, item="lamp"))
        memory = store.bind(session)
        episode_id = await memory.remember(
            Episode(
                user_id="alice",
                session_id="s1",
                input="I ordered a brass lamp",
                metadata={"order": 1, "tags": ["lamp"]},
            )
        )
        await memory.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="ordered",
                object="brass lamp",
                valid_from=MARCH,
            )
        )
        await memory.update_block("persona", "likes lamps", user_id="alice")
        # Reads through the view see the uncommitted rows of the same transaction,
        # the one-statement fact reads included (they join it, no connection of their own).
        history = await memory.fact_history(user_id="alice", subject="alice")
        assert [f.object for f in history] == ["brass lamp"]
        assert await memory.facts(user_id="alice", valid_at=MARCH) == history
        assert (await memory.get_episode(episode_id, user_id="alice")).metadata == {
            "order": 1,
            "tags": ["lamp"],
        }
        if commit:
            await session.commit()
        else:
            await session.rollback()
    return episode_id


async def _orders(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(orders))).scalar_one())


async def test_rollback_leaves_nothing_of_either(db_url: str, app_engine: AsyncEngine) -> None:
    async with MemoryStore.open(db_url) as store:
        await _write_both(store, app_engine, commit=False)
    assert await _orders(app_engine) == 0
    async with MemoryStore.open(db_url) as fresh:
        assert await fresh.recall("brass lamp", user_id="alice") == []
        assert await fresh.fact_history(user_id="alice", subject="alice") == []
        assert await fresh.working(user_id="alice") == []
        assert (await fresh.profile(user_id="alice")).episode_count == 0


async def test_commit_keeps_both(db_url: str, app_engine: AsyncEngine) -> None:
    async with MemoryStore.open(db_url) as store:
        episode_id = await _write_both(store, app_engine, commit=True)
    assert await _orders(app_engine) == 1
    async with MemoryStore.open(db_url) as fresh:
        found = await fresh.recall("brass lamp", user_id="alice")
        assert [e.id for e in found] == [episode_id]
        assert found[0].metadata == {"order": 1, "tags": ["lamp"]}
        facts = await fresh.recall_facts("lamp", user_id="alice")
        assert [f.object for f in facts] == ["brass lamp"]
        # The vector written through the application's engine is the store's own.
        scored = await fresh.recall_scored("I ordered a brass lamp", user_id="alice")
        assert scored[0].parts["dense"] == pytest.approx(1.0, abs=1e-5)
        (block,) = await fresh.working(user_id="alice")
        assert block.content == "likes lamps"


async def test_a_database_error_in_the_bound_transaction_is_a_memstore_error(
    db_url: str, app_engine: AsyncEngine
) -> None:
    async with MemoryStore.open(db_url) as store:
        taken = await store.remember(Episode(user_id="alice", session_id="s", input="first"))
        sessions = async_sessionmaker(app_engine, expire_on_commit=False)
        async with sessions() as session:
            await session.begin()
            with pytest.raises(Conflict) as raised:
                await store.bind(session).remember(
                    Episode(id=taken, user_id="alice", session_id="s", input="again")
                )
            assert isinstance(raised.value, MemstoreError)
            await session.rollback()


async def test_a_session_on_another_database_kind_is_refused(
    db_url: str, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other_url = (
        f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('other')}/other.db"
        if is_postgres(backend)
        else "postgresql+asyncpg://nobody@127.0.0.1:1/none"
    )
    other = create_async_engine(other_url)
    try:
        async with MemoryStore.open(db_url) as store:
            async with async_sessionmaker(other)() as session:
                with pytest.raises(InvalidInput):
                    store.bind(session)
            with pytest.raises(InvalidInput):
                store.bind("not a session")  # type: ignore[arg-type]
    finally:
        await other.dispose()
