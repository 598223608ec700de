"""The dialect hooks writers reach through the seam: locks, NOTIFY, sequence moves.

The repositories call :meth:`Dialect.lock`, :meth:`Dialect.announce` and
:meth:`Dialect.advance_sequences` on every backend; what each backend does with
them is its own (Postgres: advisory locks, ``pg_notify``, ``setval``; SQLite:
nothing, its writers are serial and its ids follow the largest stored one).
"""

from __future__ import annotations

from typing import cast

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.backends.sqlite import SqliteDialect
from memstore.db.engine import create_engine
from memstore.dialects import Lock, dialect_for
from tests.conftest import is_postgres

_SPACE = 0x746573  # "tes": a key space no memstore lock uses


async def test_a_lock_excludes_other_transactions_until_commit(db_url: str, backend: str) -> None:
    """Exclusive and shared, one key or many, bigint or (space, int) keys: Postgres's rules."""
    if not is_postgres(backend):
        pytest.skip("SQLite write transactions are serial (BEGIN IMMEDIATE): no locks to take")
    engine = create_engine(db_url)
    dialect = dialect_for(engine)
    try:
        async with AsyncSession(engine) as holder, AsyncSession(engine) as other:
            async with holder.begin():
                assert await dialect.lock(holder, Lock((1, 2), space=_SPACE, shared=True))
                assert await dialect.lock(holder, Lock(7))
                async with other.begin():
                    assert not await dialect.lock(other, Lock(2, space=_SPACE), wait=False)
                    assert await dialect.lock(other, Lock(2, space=_SPACE, shared=True), wait=False)
                    # The bigint keys are another space: 2 is free there, 7 is not.
                    assert await dialect.lock(other, Lock(2), wait=False)
                    assert not await dialect.lock(other, Lock(7), wait=False)
            # The holder committed: its locks are gone.
            async with other.begin():
                assert await dialect.lock(other, Lock(1, space=_SPACE), wait=False)
                assert await dialect.lock(other, Lock(7), wait=False)
    finally:
        await engine.dispose()


async def test_imported_ids_do_not_come_back_from_the_sequence(empty_db_url: str) -> None:
    """After rows with explicit ids and advance_sequences, the next generated id is new."""
    table = Table(
        "hook_serial",
        MetaData(),
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("name", String(20)),
    )
    engine = create_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(table.metadata.create_all)
        async with AsyncSession(engine) as session, session.begin():
            await session.execute(insert(table), [{"id": i, "name": "imported"} for i in (1, 2, 3)])
            await dialect_for(session).advance_sequences(session, table)
            # Run twice, as two imports would: it never moves a sequence backwards.
            await dialect_for(session).advance_sequences(session, table)
            await session.execute(insert(table).values(name="new"))
        async with AsyncSession(engine) as session:
            new = await session.scalar(select(table.c.id).where(table.c.name == "new"))
        assert new == 4
    finally:
        await engine.dispose()


async def test_a_backend_whose_writers_run_at_once_must_say_how_it_locks() -> None:
    """The ABC's defaults take nothing only where nothing is needed: serial writers, no NOTIFY."""

    class Concurrent(SqliteDialect):
        serial_writes = False
        notifies = True

    session = cast(AsyncSession, None)  # never reached: the default refuses first
    with pytest.raises(NotImplementedError, match="take no locks"):
        await Concurrent().lock(session, Lock(1))
    with pytest.raises(NotImplementedError, match="no announce"):
        await Concurrent().announce(session, "channel", "payload")
    assert await SqliteDialect().lock(session, Lock(1), wait=False)
    await SqliteDialect().announce(session, "channel", "payload")
