"""Session turns are unique and gap-free under concurrent writers (both backends), and
migration 0006 renumbers the duplicates older code left behind."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Conflict, Episode, MemoryStore
from memstore.db.engine import create_engine
from memstore.models import EpisodeRow, SessionTurnRow
from memstore.schema.migrate import upgrade
from tests.store_parts import own_engine

STORES = 2
CALLS = 40


async def turns_of(url: str, user: str, session: str) -> list[int]:
    async with own_engine(url) as engine, engine.connect() as conn:
        rows = await conn.execute(
            select(EpisodeRow.turn)
            .where(EpisodeRow.user_id == user, EpisodeRow.session_id == session)
            .order_by(EpisodeRow.turn)
        )
        return [r[0] for r in rows]


async def test_concurrent_remember_gives_unique_gap_free_turns(db_url: str) -> None:
    async with MemoryStore.open(db_url) as a, MemoryStore.open(db_url) as b:

        async def one(store: MemoryStore, i: int) -> None:
            await store.remember(Episode(user_id="u", session_id="s", input=f"turn {i}"))

        async def many(store: MemoryStore, i: int) -> None:
            await store.remember_many(
                [Episode(user_id="u", session_id="s", input=f"batch {i} {k}") for k in range(3)]
                + [Episode(user_id="u", session_id="other", input=f"other {i}")]
            )

        await asyncio.gather(*(one(s, i) for s in (a, b) for i in range(CALLS)))
        assert await turns_of(db_url, "u", "s") == list(range(STORES * CALLS))

        await asyncio.gather(*(many(s, i) for s in (a, b) for i in range(10)))
        assert await turns_of(db_url, "u", "s") == list(range(STORES * CALLS + 60))
        assert await turns_of(db_url, "u", "other") == list(range(20))


async def test_turns_follow_commit_order_and_a_rollback_leaves_no_gap(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    first = Episode(user_id="u", session_id="s", input="one")
    await store.remember(first)
    with pytest.raises(Conflict):  # same id again: the whole batch rolls back
        await store.remember_many([Episode(user_id="u", session_id="s", input="two"), first])
    await store.remember(Episode(user_id="u", session_id="s", input="three"))
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(EpisodeRow.input, EpisodeRow.turn)
                .where(EpisodeRow.user_id == "u")
                .order_by(EpisodeRow.turn)
            )
        ).all()
    assert [tuple(r) for r in rows] == [("one", 0), ("three", 1)]


async def test_the_database_refuses_a_duplicate_turn(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    await store.remember(Episode(user_id="u", session_id="s", input="one"))
    with pytest.raises(IntegrityError):
        async with engine.begin() as conn:
            await conn.execute(
                EpisodeRow.__table__.insert().values(
                    user_id="u",
                    id="dup",
                    session_id="s",
                    input="x",
                    output="",
                    tool_calls=[],
                    metadata={},
                    occurred_at=datetime.now(UTC),
                    created_at=datetime.now(UTC),
                    turn=0,
                )
            )


async def test_migration_renumbers_old_duplicate_turns(empty_db_url: str) -> None:
    await upgrade(empty_db_url, "0005")
    engine = create_engine(empty_db_url)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        async with engine.begin() as conn:
            for i, (session, turn) in enumerate(
                [("s", 0), ("s", 1), ("s", 1), ("s", 1), ("s", 2), ("t", 0), ("t", 1)]
            ):
                created = (t0 + timedelta(seconds=i)).replace(tzinfo=None)
                await conn.execute(
                    text(
                        "INSERT INTO episodes (user_id, id, session_id, input, output, "
                        "tool_calls, metadata, occurred_at, created_at, turn) VALUES "
                        "('u', :id, :sid, 'x', '', '[]', '{}', :t, :t, :turn)"
                    ),
                    {"id": f"e{i}", "sid": session, "t": created, "turn": turn},
                )
    finally:
        await engine.dispose()
    await upgrade(empty_db_url)
    async with MemoryStore.open(empty_db_url) as store:
        async with own_engine(empty_db_url) as engine, engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(EpisodeRow.id, EpisodeRow.turn)
                    .where(EpisodeRow.session_id == "s")
                    .order_by(EpisodeRow.turn)
                )
            ).all()
            counters = dict(
                (
                    await conn.execute(select(SessionTurnRow.session_id, SessionTurnRow.next_turn))
                ).all()
            )
        # Renumbered in (old turn, created_at) order; the untouched session keeps its turns.
        assert [tuple(r) for r in rows] == [("e0", 0), ("e1", 1), ("e2", 2), ("e3", 3), ("e4", 4)]
        assert await turns_of(empty_db_url, "u", "t") == [0, 1]
        assert counters == {"s": 5, "t": 2}
        await store.remember(Episode(user_id="u", session_id="s", input="new"))
        await store.remember(Episode(user_id="u", session_id="fresh", input="new"))
        assert await turns_of(empty_db_url, "u", "s") == [0, 1, 2, 3, 4, 5]
        assert await turns_of(empty_db_url, "u", "fresh") == [0]


async def test_turn_reservation_is_one_fixed_statement_for_any_batch(db_url: str) -> None:
    # A VALUES list per (tenant, session) pair was compiled anew for every batch
    # shape: ~50 ms of a 1,000-row batch spanning 800 sessions went to SQLAlchemy.
    # (Batches of several tenants; a one-tenant batch names its tenant as one value
    # so that Citus can route it: tests/test_citus_routing.py.)
    seen: list[str] = []

    def record(conn: object, cursor: object, sql: str, *args: object) -> None:
        if "session_turns" in sql:
            seen.append(sql)

    async with MemoryStore.open(db_url) as store:
        # Every engine of the process: the store's is the only one.
        event.listen(Engine, "before_cursor_execute", record)
        for pairs in (5, 7, 60):
            await store.remember_many(
                [
                    Episode(user_id=f"u{k % 5}", session_id=f"s{k}", input=f"turn {k}")
                    for k in range(pairs)
                ]
            )
        event.remove(Engine, "before_cursor_execute", record)
        assert len(seen) == 3 and len(set(seen)) == 1, seen
        assert await turns_of(db_url, "u0", "s55") == [0]
