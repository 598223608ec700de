"""Large remember_many batches (COPY on Postgres): same rows, same errors as an INSERT."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import table_counts

from memstore import Conflict, Episode, MemoryStore
from memstore.services.episodes import COPY_MIN_ROWS

T0 = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def batch(n: int, *, start: int = 0, tenants: int = 7) -> list[Episode]:
    return [
        Episode(
            id=f"e{i:05d}",
            user_id=f"u{i % tenants}",
            session_id=f"s{i % 3}",
            input=f"turn {i} about ünïcode ☃ and quotes ' \" \\ tabs\tnewlines\n",
            output="" if i % 5 else f"reply {i}",
            tool_calls=[{"name": "search", "args": {"q": i}}] if i % 4 == 0 else [],
            metadata={"i": i, "nested": {"x": [1.5, None, True]}},
            occurred_at=T0 + timedelta(seconds=i),
        )
        for i in range(start, start + n)
    ]


async def test_large_batch_round_trips_and_recalls(store: MemoryStore) -> None:
    sent = batch(COPY_MIN_ROWS + 50)
    assert await store.remember_many(sent) == [e.id for e in sent]
    for e in (sent[0], sent[4], sent[-1]):
        got = await store.get_episode(e.id, user_id=e.user_id)
        assert (got.input, got.output, got.tool_calls, got.metadata, got.occurred_at) == (
            e.input,
            e.output,
            e.tool_calls,
            e.metadata,
            e.occurred_at,
        )
    # turns follow batch order per session, and search sees the new rows
    messages = await store.session_messages("s1", user_id="u1", limit=3)
    ours = [e.id for e in sent if (e.user_id, e.session_id) == ("u1", "s1")]
    assert messages[-1].episode_id == ours[-1]
    found = await store.recall("reply 245", user_id=sent[245].user_id, limit=3)
    assert sent[245].id in [e.id for e in found]


async def test_large_batch_with_a_taken_id_writes_nothing(db_url: str, store: MemoryStore) -> None:
    await store.remember_many(batch(3))
    before = await table_counts(db_url)
    with pytest.raises(Conflict) as caught:
        await store.remember_many(batch(COPY_MIN_ROWS + 10))  # e00000..e00002 exist
    assert caught.value.table == "episodes"
    assert caught.value.constraint is not None
    assert await table_counts(db_url) == before
    # the store still works afterwards (the connection went back clean)
    assert len(await store.remember_many(batch(COPY_MIN_ROWS, start=10_000))) == COPY_MIN_ROWS
