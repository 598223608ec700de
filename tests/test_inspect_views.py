"""The inspector's read model: fact status, lanes, diffs; reading without recording."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstore import ANONYMOUS, Episode, Fact, MemoryStore
from memstore.errors import InvalidInput
from memstore.inspect.views import build_tenant_view, build_timeline, diff_lines
from tests.conftest import table_counts
from tests.inspect_support import StepClock


def _row(
    i: str,
    obj: str,
    recorded: str,
    superseded: str | None = None,
    valid_from: str = "2026-03-01T00:00:00+00:00",
    valid_to: str | None = None,
    predicate: str = "lives_in",
) -> dict[str, object]:
    return {
        "id": i,
        "fact_id": i,
        "subject": "alice",
        "predicate": predicate,
        "object": obj,
        "confidence": 1.0,
        "sources": [],
        "valid_from": valid_from,
        "valid_to": valid_to,
        "recorded_at": recorded,
        "superseded_at": superseded,
    }


def test_status_tells_a_correction_from_a_retraction() -> None:
    t1, t2, t3 = (f"2026-07-0{d}T00:00:00+00:00" for d in (1, 2, 3))
    facts = [
        _row("a", "Paris", t1, superseded=t2),
        _row("b", "Paris", t2, valid_to="2026-06-01T00:00:00+00:00"),
        _row("c", "London", t2, valid_from="2026-06-01T00:00:00+00:00"),
        _row("d", "cats", t1, superseded=t3, predicate="likes"),
    ]
    view = build_timeline(facts, datetime(2026, 8, 1, tzinfo=UTC))
    status = {b.row_id: b.status for lane in view.lanes for b in lane.bars}
    assert status == {"a": "superseded", "b": "current", "c": "current", "d": "retracted"}
    assert [(lane.subject, lane.predicate) for lane in view.lanes] == [
        ("alice", "likes"),
        ("alice", "lives_in"),
    ]
    kinds = [(c.kind, c.bar.row_id) for c in view.changes]
    assert ("superseded", "a") in kinds and ("retracted", "d") in kinds
    # Three transaction times: t1, t2, t3.
    assert len(view.known_steps) == 3
    bars = {b.row_id: b for lane in view.lanes for b in lane.bars}
    # Valid time drives the geometry: Paris ends where London begins.
    assert abs(bars["b"].x + bars["b"].width - bars["c"].x) < 0.01


def test_block_diff() -> None:
    assert diff_lines("a\nb", "a\nc") == [(" ", "a"), ("-", "b"), ("+", "c")]
    assert diff_lines("", "x") == [("+", "x")]


def test_empty_tenant() -> None:
    view = build_tenant_view({}, datetime(2026, 1, 1, tzinfo=UTC))
    assert view.timeline.lanes == [] and view.sessions == [] and view.blocks == []


async def test_list_tenants_cross_tenant(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        assert await store.list_tenants_cross_tenant() == []
        await store.remember(Episode(session_id="s", user_id="bob", input="hi", output=""))
        await store.remember(Episode(session_id="s", user_id=ANONYMOUS, input="hi", output=""))
        await store.update_block("persona", "x", user_id="alice")
        assert await store.list_tenants_cross_tenant() == [ANONYMOUS, "alice", "bob"]
        assert await store.list_tenants_cross_tenant(limit=1) == [ANONYMOUS]


async def test_reads_unrecorded_records_no_access(db_url: str) -> None:
    async with MemoryStore.open(db_url, clock=StepClock()) as store:
        ep = await store.remember(
            Episode(session_id="s", user_id="alice", input="I moved to Paris", output="ok")
        )
        await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="lives_in",
                object="Paris",
                valid_from=datetime(2026, 3, 1, tzinfo=UTC),
            )
        )
        with store.reads_unrecorded():
            assert await store.recall_scored("paris", user_id="alice")
            assert await store.recall_facts("paris", user_id="alice")
            await store.get_episode(ep, user_id="alice")
        await store.flush_access()
        assert (await table_counts(db_url))["access_stats"] == 0
        # Outside the block the same reads are counted (the test can fail).
        await store.recall_scored("paris", user_id="alice")
        await store.flush_access()
        assert (await table_counts(db_url))["access_stats"] == 1


async def test_snapshot_is_bounded_vector_free_and_per_tenant(db_url: str) -> None:
    async with MemoryStore.open(db_url, clock=StepClock()) as store:
        await store.remember_many(
            [
                Episode(session_id="s", user_id="alice", input=f"turn {i}", output="")
                for i in range(5)
            ]
        )
        await store.remember(Episode(session_id="s", user_id="bob", input="bob's", output=""))
        snap = await store.snapshot(user_id="alice", max_rows_per_table=3)
        episodes = snap["tables"]["episodes"]
        assert snap["totals"]["episodes"] == 5 and len(episodes) == 3
        # Newest first, so a cut keeps the recent turns.
        assert [e["input"] for e in episodes] == ["turn 4", "turn 3", "turn 2"]
        assert all(not {"embedding", "search_text", "user_id"} & set(e) for e in episodes)
        assert (await store.snapshot(user_id="carol"))["totals"]["episodes"] == 0
        with pytest.raises(InvalidInput):
            await store.snapshot(user_id="alice", max_rows_per_table=0)
