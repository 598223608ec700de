"""store.facts(...): current or as-of facts without a search query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import table_counts

from memstore import Fact, InvalidInput, MemoryStore

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)


def _fact(predicate: str, obj: str, valid_from: datetime, user: str = "alice") -> Fact:
    return Fact(
        user_id=user, subject="alice", predicate=predicate, object=obj, valid_from=valid_from
    )


async def test_current_and_as_of_facts(db_url: str) -> None:
    clock = [MARCH + timedelta(days=1)]
    async with MemoryStore.open(db_url, clock=lambda: clock[0]) as store:
        await store.add_fact(_fact("lives_in", "Paris", MARCH))
        await store.add_fact(_fact("likes", "tea", MARCH))
        recorded_paris = clock[0]
        clock[0] = JUNE + timedelta(days=1)
        await store.add_fact(_fact("lives_in", "Berlin", JUNE))  # a correction from June
        await store.add_fact(_fact("lives_in", "Oslo", JUNE, user="bob"))

        now = {(f.predicate, f.object) for f in await store.facts(user_id="alice")}
        assert now == {("lives_in", "Berlin"), ("likes", "tea")}
        city = await store.facts(user_id="alice", subject="alice", predicate="lives_in")
        assert [f.object for f in city] == ["Berlin"]
        # Valid time: in April alice lived in Paris (as we know now).
        april = MARCH + timedelta(days=40)
        then = await store.facts(user_id="alice", predicate="lives_in", valid_at=april)
        assert [f.object for f in then] == ["Paris"]
        # Transaction time: before the correction was recorded we believed Paris in July.
        july = JUNE + timedelta(days=40)
        believed = await store.facts(
            user_id="alice", predicate="lives_in", valid_at=july, known_at=recorded_paris
        )
        assert [f.object for f in believed] == ["Paris"]
        # Retraction ends the belief from now on; the past belief stays visible.
        (tea,) = await store.facts(user_id="alice", predicate="likes")
        retracted_at = clock[0]
        clock[0] += timedelta(days=1)
        await store.retract_fact(tea.fact_id or "", user_id="alice")
        assert await store.facts(user_id="alice", predicate="likes") == []
        before = await store.facts(user_id="alice", predicate="likes", known_at=retracted_at)
        assert [f.object for f in before] == ["tea"]
        # Tenants never see each other's facts; limit caps the page.
        assert [f.object for f in await store.facts(user_id="bob")] == ["Oslo"]
        assert len(await store.facts(user_id="alice", limit=1)) == 1
        assert await store.facts(user_id="carol") == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"valid_at": datetime(2026, 1, 1)},  # naive
        {"known_at": "2026-01-01"},
        {"limit": 0},
        {"limit": True},
        {"subject": ""},
        {"predicate": ""},
        {"user_id": ""},
    ],
)
async def test_bad_arguments_are_refused(db_url: str, kwargs: dict[str, object]) -> None:
    async with MemoryStore.open(db_url) as store:
        with pytest.raises(InvalidInput):
            await store.facts(**{"user_id": "alice", **kwargs})  # type: ignore[arg-type]
        assert set((await table_counts(db_url)).values()) <= {0}
