"""Malformed recall time ranges and consolidation batch sizes are refused with InvalidInput."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memstore import Episode, InvalidInput, MemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.mark.parametrize("time_range", [(T0,), (T0, T1, T1), (T1, T0), (), "2026", (T0, None)])
async def test_bad_time_range_is_invalid_input(store: MemoryStore, time_range: Any) -> None:
    await store.remember(Episode(user_id="u", session_id="s", input="paris trip", occurred_at=T0))
    for call in (store.recall, store.recall_scored):
        with pytest.raises(InvalidInput, match="time_range"):
            await call("paris", user_id="u", time_range=time_range)
        with pytest.raises(InvalidInput, match="time_range"):
            await call("", user_id="u", time_range=time_range)


async def test_good_time_range_still_filters(store: MemoryStore) -> None:
    await store.remember(Episode(user_id="u", session_id="s", input="paris trip", occurred_at=T0))
    assert len(await store.recall("paris", user_id="u", time_range=(T0, T0))) == 1
    assert await store.recall("paris", user_id="u", time_range=(T1, T1)) == []


@pytest.mark.parametrize("batch_size", [0, -1, True, 2.5])
async def test_consolidate_refuses_bad_batch_size(store: MemoryStore, batch_size: Any) -> None:
    await store.remember(Episode(user_id="u", session_id="s", input="I live in Paris"))
    with pytest.raises(InvalidInput, match="batch_size"):
        await store.consolidate(user_id="u", batch_size=batch_size)
    assert (await store.consolidate(user_id="u")).processed == 1  # nothing consumed by the refusal


@pytest.mark.parametrize(
    "weight",
    [float("nan"), float("inf"), pytest.param(10**400, id="int-beyond-float"), -1, True, "1", None],
)
async def test_bad_recency_weight_is_invalid_input(store: MemoryStore, weight: Any) -> None:
    await store.remember(Episode(user_id="u", session_id="s", input="paris trip", occurred_at=T0))
    for call in (store.recall, store.recall_scored):
        with pytest.raises(InvalidInput, match="recency_weight"):
            await call("paris", user_id="u", recency_weight=weight)
