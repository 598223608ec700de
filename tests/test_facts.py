"""Bi-temporal fact semantics (SPEC section 1), on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstore import Fact, FactChange, MemoryStore, NotFound

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
AUGUST = datetime(2026, 8, 1, tzinfo=UTC)


def lives_in(city: str, valid_from: datetime, **kw: object) -> Fact:
    return Fact(
        user_id="alice",
        subject="alice",
        predicate="lives_in",
        object=city,
        valid_from=valid_from,
        **kw,
    )  # type: ignore[arg-type]


async def objects(store: MemoryStore, **kw: object) -> list[str]:
    facts = await store.recall_facts("alice lives", user_id="alice", limit=50, **kw)  # type: ignore[arg-type]
    return sorted(f.object for f in facts)


async def test_correction_closes_valid_time_and_keeps_old_belief(store: MemoryStore) -> None:
    paris_id = await store.add_fact(lives_in("Paris", MARCH))
    before_correction = store.now()
    outcome = await store.assert_fact(lives_in("London", JUNE))
    assert outcome.change is FactChange.SUPERSEDED

    # As known now: Paris in April, London in July, nothing before March.
    assert await objects(store, valid_at=MARCH + timedelta(days=30)) == ["Paris"]
    assert await objects(store, valid_at=AUGUST) == ["London"]
    assert await objects(store, valid_at=MARCH - timedelta(days=1)) == []
    # As known before the correction: Paris with no end, London unknown.
    assert await objects(store, valid_at=AUGUST, known_at=before_correction) == ["Paris"]

    history = await store.fact_history(user_id="alice", subject="alice", predicate="lives_in")
    assert [(f.object, f.valid_from, f.valid_to, f.superseded_at is None) for f in history] == [
        ("Paris", MARCH, None, False),
        ("Paris", MARCH, JUNE, True),
        ("London", JUNE, None, True),
    ]
    # The corrected copy keeps the logical id, so it can still be retracted by it.
    assert history[1].fact_id == paris_id
    assert history[0].recorded_at is not None and history[1].recorded_at is not None
    assert history[0].recorded_at <= history[1].recorded_at


async def test_identical_reassertion_merges_sources(store: MemoryStore) -> None:
    first = await store.add_fact(lives_in("Paris", MARCH, sources=("ep-1",)))
    outcome = await store.assert_fact(lives_in("paris", JUNE, sources=("ep-2",)))
    assert outcome.change is FactChange.REINFORCED
    assert outcome.fact_id == first
    current = await store.recall_facts("paris", user_id="alice")
    assert len(current) == 1
    assert current[0].sources == ("ep-1", "ep-2")
    assert current[0].valid_from == MARCH  # still true since March, not since June

    again = await store.assert_fact(lives_in("Paris", JUNE, sources=("ep-2",)))
    assert again.change is FactChange.UNCHANGED
    history = await store.fact_history(user_id="alice", fact_id=first)
    assert sum(f.superseded_at is None for f in history) == 1


async def test_reinforcement_raises_confidence(store: MemoryStore) -> None:
    await store.add_fact(lives_in("Paris", MARCH, confidence=0.5))
    await store.add_fact(lives_in("Paris", MARCH, confidence=0.5))
    (fact,) = await store.recall_facts("paris", user_id="alice")
    assert fact.confidence == pytest.approx(0.75)


async def test_retraction_closes_transaction_time_only(store: MemoryStore) -> None:
    fact_id = await store.add_fact(lives_in("Paris", MARCH))
    believed = store.now()
    await store.retract_fact(fact_id, user_id="alice")
    assert await objects(store) == []
    assert await objects(store, known_at=believed) == ["Paris"]
    (row,) = await store.fact_history(user_id="alice", fact_id=fact_id)
    assert row.valid_to is None and row.superseded_at is not None
    with pytest.raises(NotFound):
        await store.retract_fact(fact_id, user_id="alice")


async def test_multi_valued_predicates_accumulate(store: MemoryStore) -> None:
    for food in ("sushi", "pasta", "tacos"):
        await store.add_fact(
            Fact(user_id="alice", subject="alice", predicate="likes", object=food, valid_from=MARCH)
        )
    facts = await store.recall_facts("alice likes", user_id="alice", limit=10)
    assert sorted(f.object for f in facts) == ["pasta", "sushi", "tacos"]


async def test_backdated_value_ends_where_current_begins(store: MemoryStore) -> None:
    await store.add_fact(lives_in("London", JUNE))
    outcome = await store.assert_fact(lives_in("Paris", MARCH))
    assert outcome.change is FactChange.ADDED
    assert await objects(store, valid_at=MARCH + timedelta(days=1)) == ["Paris"]
    assert await objects(store, valid_at=AUGUST) == ["London"]


async def test_same_start_replaces_wrong_value(store: MemoryStore) -> None:
    await store.add_fact(lives_in("Pariss", MARCH))
    await store.add_fact(lives_in("Paris", MARCH))
    assert await objects(store, valid_at=JUNE) == ["Paris"]


async def test_predicates_are_normalised(store: MemoryStore) -> None:
    await store.add_fact(
        Fact(
            user_id="alice", subject="alice", predicate="Lives In", object="Paris", valid_from=MARCH
        )
    )
    history = await store.fact_history(user_id="alice", predicate="lives-in")
    assert [f.predicate for f in history] == ["lives_in"]


async def test_history_is_ordered_by_valid_from_then_recorded_at(store: MemoryStore) -> None:
    await store.add_fact(lives_in("Berlin", AUGUST))
    await store.add_fact(lives_in("Paris", MARCH))
    await store.add_fact(lives_in("London", JUNE))
    history = await store.fact_history(user_id="alice", subject="alice")
    keys = [(f.valid_from, f.recorded_at) for f in history]
    assert keys == sorted(keys)  # type: ignore[type-var]
    assert await objects(store, valid_at=MARCH + timedelta(days=1)) == ["Paris"]
    assert await objects(store, valid_at=JUNE + timedelta(days=1)) == ["London"]
    assert await objects(store, valid_at=AUGUST + timedelta(days=1)) == ["Berlin"]


async def test_explicit_valid_interval(store: MemoryStore) -> None:
    await store.add_fact(
        lives_in(
            "Rome", datetime(2010, 1, 1, tzinfo=UTC), valid_to=datetime(2015, 1, 1, tzinfo=UTC)
        )
    )
    await store.add_fact(lives_in("Paris", MARCH))
    assert await objects(store, valid_at=datetime(2012, 1, 1, tzinfo=UTC)) == ["Rome"]
    assert await objects(store, valid_at=JUNE) == ["Paris"]
