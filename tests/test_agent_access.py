"""Access tracking: counts grow on recall and load, batched flushes, prior, prefetch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstore import Episode, Fact, MemoryStore
from memstore.services.agent import access_prior
from tests.conftest import table_counts
from tests.store_parts import StoreParts

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def counts_of(store: MemoryStore, user: str) -> dict[tuple[str, str], int]:
    return {
        (s.kind, s.item_id): s.access_count
        for s in await store.access_stats(user_id=user, limit=1000)
    }


async def test_access_counts_increase_on_recall_and_load(store: MemoryStore) -> None:
    ep = await store.remember(Episode(user_id="u", session_id="s", input="tea in Kyoto"))
    fact = await store.add_fact(Fact(user_id="u", subject="u", predicate="likes", object="tea"))
    assert await counts_of(store, "u") == {}

    await store.recall("kyoto", user_id="u")
    await store.recall_facts("tea", user_id="u")
    assert await counts_of(store, "u") == {("episode", ep): 1, ("fact", fact): 1}

    await store.get_episode(ep, user_id="u")
    await store.call_tool("load_memory", {"id": f"fact:{fact}"}, user_id="u")
    await store.call_tool("load_memory", {"id": f"episode:{ep}"}, user_id="u")
    assert await counts_of(store, "u") == {("episode", ep): 3, ("fact", fact): 2}
    stats = await store.access_stats(user_id="u", kind="episode")
    assert stats[0].last_accessed_at.tzinfo is not None
    assert await store.access_counts("episode", [ep, "other"], user_id="u") == {ep: 3}


async def test_buffer_is_off_the_database_until_flushed(db_url: str, store: MemoryStore) -> None:
    ep = await store.remember(Episode(user_id="u", session_id="s", input="buffered"))
    for _ in range(5):
        await store.get_episode(ep, user_id="u")
    # Recorded in memory only: nothing written yet, but readers see the pending counts.
    assert (await table_counts(db_url))["access_stats"] == 0
    assert await store.access_counts("episode", [ep], user_id="u") == {ep: 5}
    await store.flush_access()
    assert (await table_counts(db_url))["access_stats"] == 1
    await store.flush_access()  # nothing pending: no change
    assert await store.access_counts("episode", [ep], user_id="u") == {ep: 5}


async def test_buffer_flushes_by_itself_after_enough_events(db_url: str, parts: StoreParts) -> None:
    store = parts.store
    parts.tracker.flush_every = 10
    ids = await store.remember_many(
        [Episode(user_id="u", session_id="s", input=f"item {n}") for n in range(12)]
    )
    for episode_id in ids:
        await store.get_episode(episode_id, user_id="u")
    assert await parts.tracker.background_flush_done()
    assert (await table_counts(db_url))["access_stats"] >= 10


async def test_counts_survive_close_and_are_per_tenant(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        ep = await store.remember(Episode(user_id="a", session_id="s", input="shared words"))
        ep_b = await store.remember(Episode(user_id="b", session_id="s", input="shared words"))
        await store.recall("shared", user_id="a")
        await store.recall("shared", user_id="a")
        await store.recall("shared", user_id="b")
    async with MemoryStore.open(db_url) as store:  # flushed on close
        assert await counts_of(store, "a") == {("episode", ep): 2}
        assert await counts_of(store, "b") == {("episode", ep_b): 1}
        # Erasing a tenant erases its counters too (and any still buffered).
        await store.get_episode(ep, user_id="a")
        await store.forget(user_id="a")
        await store.flush_access()
        assert await counts_of(store, "a") == {}
        assert await counts_of(store, "b") == {("episode", ep_b): 1}


async def test_concurrent_flushes_add_up(store: MemoryStore) -> None:
    import asyncio

    ep = await store.remember(Episode(user_id="u", session_id="s", input="hot"))

    async def hammer() -> None:
        for _ in range(20):
            store.record_access("episode", [ep], user_id="u")
            await store.flush_access()

    await asyncio.gather(*(hammer() for _ in range(3)))
    assert await store.access_counts("episode", [ep], user_id="u") == {ep: 60}


def test_prior_is_small_and_monotonic() -> None:
    values = [access_prior(n) for n in (0, 1, 5, 50, 1000, 10**9)]
    assert values[0] == 0.0
    assert values == sorted(values)
    assert max(values) <= 0.05


async def test_prior_breaks_ties_in_context(store: MemoryStore) -> None:
    a, b = await store.remember_many(
        [
            Episode(user_id="u", session_id="old", input="orchid care", occurred_at=T0),
            Episode(user_id="u", session_id="old", input="orchid care", occurred_at=T0),
        ]
    )
    with store.reads_unrecorded():
        before = await store.context(user_id="u", query="orchid", max_tokens=5000)
    first = before.episodes[0].id.removeprefix("episode:")
    other = b if first == a else a
    for _ in range(3):
        await store.get_episode(other, user_id="u")
    after = await store.context(user_id="u", query="orchid", max_tokens=5000)
    assert after.episodes[0].id == f"episode:{other}"
    # ...but it does not outrank a clearly better match.
    better = await store.remember(
        Episode(
            user_id="u", session_id="old", input="orchid care and orchid repotting", occurred_at=T0
        )
    )
    ranked = await store.context(user_id="u", query="orchid repotting", max_tokens=5000)
    assert ranked.episodes[0].id == f"episode:{better}"


async def test_context_counts_only_what_it_packed(store: MemoryStore) -> None:
    ids = await store.remember_many(
        [
            Episode(
                user_id="u",
                session_id="old",
                input=f"lichen note {n} " + "pad " * 200,
                occurred_at=T0 + timedelta(minutes=n),
            )
            for n in range(5)
        ]
    )
    ctx = await store.context(user_id="u", query="lichen", max_tokens=400)
    packed = {i.id.removeprefix("episode:") for i in ctx.episodes}
    assert packed and len(packed) < 5
    counts = await store.access_counts("episode", ids, user_id="u")
    assert set(counts) == packed


async def test_prefetch_returns_hottest_items(store: MemoryStore) -> None:
    last = await store.remember_many(
        [
            Episode(
                user_id="u", session_id="yesterday", input="we planned the trip", occurred_at=T0
            ),
            Episode(
                user_id="u",
                session_id="yesterday",
                input="book the train",
                occurred_at=T0 + timedelta(minutes=5),
            ),
        ]
    )
    await store.remember(
        Episode(user_id="u", session_id="today", input="hello", occurred_at=T0 + timedelta(days=1))
    )
    hot = await store.add_fact(Fact(user_id="u", subject="u", predicate="likes", object="trains"))
    cold = await store.add_fact(Fact(user_id="u", subject="u", predicate="owns", object="a cat"))
    gone = await store.add_fact(Fact(user_id="u", subject="u", predicate="wants", object="a car"))
    for _ in range(3):
        await store.call_tool("load_memory", {"id": f"fact:{hot}"}, user_id="u")
        await store.call_tool("load_memory", {"id": f"fact:{gone}"}, user_id="u")
    await store.call_tool("load_memory", {"id": f"fact:{cold}"}, user_id="u")
    await store.retract_fact(gone, user_id="u")

    items = await store.prefetch(user_id="u", session_id="today", limit=5)
    ids = [i.id for i in items]
    assert ids[0] == f"episode:{last[1]}"  # how the last other session ended
    assert ids.index(f"fact:{hot}") < ids.index(f"fact:{cold}")
    assert f"fact:{gone}" not in ids  # no longer true
    assert len(ids) == len(set(ids))
    before = await store.access_counts("fact", [hot], user_id="u")
    await store.prefetch(user_id="u", session_id="today")
    assert await store.access_counts("fact", [hot], user_id="u") == before  # not self-feeding


async def test_forgetting_a_session_drops_its_episode_counters(store: MemoryStore) -> None:
    gone = await store.remember(Episode(user_id="u", session_id="old", input="drop me"))
    kept = await store.remember(Episode(user_id="u", session_id="new", input="keep me"))
    other = await store.remember(Episode(user_id="v", session_id="old", input="not yours"))
    for episode_id, user in ((gone, "u"), (kept, "u"), (other, "v")):
        await store.get_episode(episode_id, user_id=user)
    await store.flush_access()
    assert await store.forget(user_id="u", session_id="old") == 1
    assert await counts_of(store, "u") == {("episode", kept): 1}
    assert await counts_of(store, "v") == {("episode", other): 1}
