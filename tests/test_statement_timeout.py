"""A statement that waits past ``command_timeout``: Unavailable saying so, nothing written.

Under a Citus shard move (``block_writes``) a write to the moving shard waits for the copy;
a plain lock held by another transaction makes the same wait on any PostgreSQL. The
caller must learn that the server answered too late (retry, or raise the timeout), not
that it is unreachable.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Episode, MemoryStore, Unavailable
from tests.conftest import is_postgres


async def test_a_write_waiting_past_command_timeout_says_so_and_writes_nothing(
    backend: str, db_url: str, engine: AsyncEngine
) -> None:
    if not is_postgres(backend):
        pytest.skip("command_timeout is the PostgreSQL driver's")
    async with MemoryStore.open(db_url, engine_options={"command_timeout": 0.5}) as store:
        await store.remember(Episode(user_id="ann", session_id="s", input="before"))
        async with engine.connect() as holder:
            held = await holder.begin()
            await holder.execute(text("LOCK TABLE episodes IN EXCLUSIVE MODE"))
            with pytest.raises(Unavailable) as refused:
                await store.remember(Episode(user_id="ann", session_id="s", input="blocked"))
            await held.rollback()
        message = str(refused.value)
        assert "command_timeout" in message and "unreachable" not in message
        stored = await store.recall("", user_id="ann", limit=10)
        assert [e.input for e in stored] == ["before"]
