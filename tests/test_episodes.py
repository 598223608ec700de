"""Episodes: remember, recall, sessions, profile, forget by session or time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstore import Conflict, Episode, InvalidInput, MemoryStore, NotFound, Role

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


def turn(i: int, text: str, session: str = "s1", user: str | None = "alice") -> Episode:
    return Episode(
        user_id=user,
        session_id=session,
        input=text,
        output=f"reply {i}",
        occurred_at=T0 + timedelta(minutes=i),
        metadata={"i": i},
        tool_calls=[{"name": "search", "args": {"q": text}}],
    )


async def test_remember_round_trips_every_field(store: MemoryStore) -> None:
    episode = turn(1, "Café ☕ in Zürich — naïve?")
    assert await store.remember(episode) == episode.id
    loaded = await store.get_episode(episode.id, user_id="alice")
    assert loaded == episode
    assert loaded.occurred_at.tzinfo is not None


async def test_remember_many_is_one_transaction(store: MemoryStore) -> None:
    good = [turn(i, f"message {i}") for i in range(3)]
    bad = Episode(user_id="alice", session_id="s1", input="", output="")
    with pytest.raises(InvalidInput):
        await store.remember_many([*good, bad])
    assert (await store.profile(user_id="alice")).episode_count == 0
    ids = await store.remember_many(good)
    assert ids == [e.id for e in good]
    with pytest.raises(Conflict):  # same ids again: the whole batch is refused
        await store.remember_many(good)
    assert (await store.profile(user_id="alice")).episode_count == 3


async def test_keyword_recall_ranks_matches_then_recency(store: MemoryStore) -> None:
    await store.remember_many(
        [
            turn(0, "We talked about the Paris trip"),
            turn(1, "Lunch was pasta"),
            turn(2, "Paris again: the Louvre trip was long"),
            turn(3, "Nothing relevant"),
        ]
    )
    hits = await store.recall_scored("Paris trip Louvre", user_id="alice", limit=3)
    assert [h.episode.input for h in hits][:2] == [
        "Paris again: the Louvre trip was long",
        "We talked about the Paris trip",
    ]
    assert hits[0].parts["ranking"] > hits[1].parts["ranking"]
    assert set(hits[0].parts) >= {"keyword", "dense", "fused"}
    weighted = await store.recall_scored("Paris", user_id="alice", limit=1, recency_weight=0.1)
    assert "recency" in weighted[0].parts


async def test_recall_time_range(store: MemoryStore) -> None:
    await store.remember_many([turn(i, "paris") for i in range(5)])
    window = (T0 + timedelta(minutes=1), T0 + timedelta(minutes=3))
    hits = await store.recall("paris", user_id="alice", limit=10, time_range=window)
    assert sorted(h.metadata["i"] for h in hits) == [1, 2, 3]


async def test_session_messages_are_latest_turns_oldest_first(store: MemoryStore) -> None:
    await store.remember_many([turn(i, f"q{i}") for i in range(5)] + [turn(9, "other", "s2")])
    messages = await store.session_messages("s1", user_id="alice", limit=4)
    assert [(m.role, m.content) for m in messages] == [
        (Role.USER, "q3"),
        (Role.ASSISTANT, "reply 3"),
        (Role.USER, "q4"),
        (Role.ASSISTANT, "reply 4"),
    ]


async def test_profile(store: MemoryStore) -> None:
    await store.remember_many([turn(0, "a", "s1"), turn(5, "b", "s2"), turn(2, "c", "s1")])
    profile = await store.profile(user_id="alice")
    assert profile.episode_count == 3
    assert profile.last_seen == T0 + timedelta(minutes=5)
    assert profile.recent_sessions == ["s2", "s1"]


async def test_forget_by_session_and_before(store: MemoryStore) -> None:
    await store.remember_many(
        [turn(i, "x", "s1") for i in range(3)] + [turn(i, "y", "s2") for i in range(3)]
    )
    assert await store.forget(user_id="alice", session_id="s1") == 3
    assert await store.forget(user_id="alice", before=T0 + timedelta(minutes=2)) == 2
    remaining = await store.recall("", user_id="alice", limit=10)
    assert [(e.session_id, e.metadata["i"]) for e in remaining] == [("s2", 2)]


async def test_get_episode_of_other_tenant_is_not_found(store: MemoryStore) -> None:
    episode_id = await store.remember(turn(0, "secret"))
    with pytest.raises(NotFound):
        await store.get_episode(episode_id, user_id="mallory")
