"""The relevance floor: ``min_score`` on recall, recall_scored, recall_facts, context."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memstore import Episode, Fact, InvalidInput, MemoryStore
from memstore.recall.relevance import coverage

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FLOOR = 0.35  # the documented recommendation (docs/RECALL.md)
UNRELATED = (
    "zzz",
    "How do I configure a Kubernetes ingress controller?",
    "What is the boiling point of mercury in kelvin?",
)


def ep(text: str, session: str = "s1") -> Episode:
    return Episode(session_id=session, user_id="alice", input=text, occurred_at=T0)


CONVERSATION = [
    ep("I signed up for a watercolour painting class on Saturdays", "art"),
    ep("My first painting was a sunset over the harbour", "art"),
    ep("We booked the holiday trip to Lisbon for June", "trip"),
    ep("The flight to Lisbon leaves at seven in the morning", "trip"),
    ep("Our dog Biscuit chewed the sofa again", "home"),
    ep("I need to buy groceries: milk, bread and eggs", "home"),
]


@pytest.fixture
async def talked(store: MemoryStore) -> MemoryStore:
    await store.remember_many(CONVERSATION)
    return store


async def test_unrelated_queries_return_nothing_at_the_floor(talked: MemoryStore) -> None:
    for query in UNRELATED:
        # Today's behaviour without a floor: z-scores always rank someone first.
        assert len(await talked.recall(query, user_id="alice", limit=5)) == 5
        assert await talked.recall(query, user_id="alice", limit=5, min_score=FLOOR) == []
        assert await talked.recall_scored(query, user_id="alice", min_score=FLOOR) == []


async def test_relevant_rows_survive_the_floor(talked: MemoryStore) -> None:
    kept = await talked.recall("painting class", user_id="alice", limit=5, min_score=FLOOR)
    assert kept and kept[0].input.startswith("I signed up for a watercolour painting class")
    assert {e.input for e in kept} >= {CONVERSATION[0].input, CONVERSATION[1].input}
    assert all("Lisbon" not in e.input and "groceries" not in e.input for e in kept)
    trip = await talked.recall("When is the Lisbon flight?", user_id="alice", min_score=FLOOR)
    assert trip[0].input == CONVERSATION[3].input


async def test_no_floor_is_exactly_the_unfloored_ranking(talked: MemoryStore) -> None:
    for query in ("painting class", "zzz", "Lisbon trip in June"):
        plain = await talked.recall_scored(query, user_id="alice", limit=6)
        none = await talked.recall_scored(query, user_id="alice", limit=6, min_score=None)
        zero = await talked.recall_scored(query, user_id="alice", limit=6, min_score=0)
        assert len(plain) == 6
        for other in (none, zero):
            assert [(m.episode.id, m.score) for m in other] == [
                (m.episode.id, m.score) for m in plain
            ]


async def test_floor_keeps_the_order_and_drops_only_rows_below_it(talked: MemoryStore) -> None:
    plain = await talked.recall_scored("painting a sunset in Lisbon", user_id="alice", limit=6)
    for floor in (0.2, 0.35, 0.5, 0.9):
        floored = await talked.recall_scored(
            "painting a sunset in Lisbon", user_id="alice", limit=6, min_score=floor
        )
        assert [m.episode.id for m in floored] == [
            m.episode.id for m in plain if m.parts["relevance"] >= floor
        ]
    assert 0 < len([m for m in plain if m.parts["relevance"] >= FLOOR]) < len(plain)


async def test_relevance_is_max_of_cosine_and_term_coverage(talked: MemoryStore) -> None:
    hits = await talked.recall_scored("painting groceries zebra", user_id="alice", limit=6)
    for hit in hits:
        relevance = hit.parts["relevance"]
        assert 0.0 <= relevance <= 1.0
        assert relevance == pytest.approx(
            max(
                min(max(hit.parts["dense"], 0.0), 1.0),
                coverage(["paint", "groceri", "zebra"], hit.episode.input),
            )
        )
    groceries = next(h for h in hits if "groceries" in h.episode.input)
    assert groceries.parts["relevance"] >= 1 / 3  # one of three terms, whatever the cosine


def test_coverage_matches_terms_as_keyword_search_does() -> None:
    assert coverage(["paint", "lisbon"], "She was painting in Lisbon") == 1.0
    assert coverage(["paint", "lisbon"], "She was painting in Porto") == 0.5
    assert coverage(["go"], "we are going") == 0.0  # short stems match whole words only
    assert coverage(["go"], "let's go") == 1.0
    assert coverage([], "anything") == 0.0


async def test_empty_query_reaches_no_positive_floor(talked: MemoryStore) -> None:
    assert len(await talked.recall("", user_id="alice", limit=3)) == 3
    assert len(await talked.recall("", user_id="alice", limit=3, min_score=0)) == 3
    newest = await talked.recall_scored("", user_id="alice", limit=3)
    assert [m.parts for m in newest] == [{"relevance": 0.0}] * 3
    assert await talked.recall("", user_id="alice", limit=3, min_score=0.1) == []
    assert await talked.recall_facts("  ", user_id="alice", min_score=0.1) == []


async def test_recall_facts_floor(store: MemoryStore) -> None:
    for subject, predicate, obj in (
        ("alice", "lives_in", "Lisbon"),
        ("alice", "likes", "watercolour painting"),
        ("alice", "owns", "a dog called Biscuit"),
    ):
        await store.add_fact(
            Fact(user_id="alice", subject=subject, predicate=predicate, object=obj)
        )
    for query in UNRELATED:
        assert len(await store.recall_facts(query, user_id="alice")) == 3
        assert await store.recall_facts(query, user_id="alice", min_score=FLOOR) == []
    kept = await store.recall_facts("where does alice live?", user_id="alice", min_score=FLOOR)
    assert kept and kept[0].object == "Lisbon"
    painting = await store.recall_facts("painting", user_id="alice", min_score=FLOOR)
    assert [f.object for f in painting] == ["watercolour painting"]


async def test_context_floor(talked: MemoryStore) -> None:
    await talked.add_fact(
        Fact(user_id="alice", subject="alice", predicate="lives_in", object="Lisbon")
    )
    await talked.update_block("persona", "Alice paints.", user_id="alice")
    loose = await talked.context(user_id="alice", query="zzz", max_tokens=4_000)
    assert loose.facts and loose.episodes
    strict = await talked.context(user_id="alice", query="zzz", max_tokens=4_000, min_score=FLOOR)
    assert not strict.facts and not strict.episodes
    assert [b.id for b in strict.blocks] == ["block:persona"]  # blocks are not recalled
    on_topic = await talked.context(
        user_id="alice", query="the Lisbon flight", max_tokens=4_000, min_score=FLOOR
    )
    assert on_topic.facts and any("flight to Lisbon" in e.text for e in on_topic.episodes)


BAD_FLOORS: list[Any] = [float("nan"), float("inf"), -float("inf"), -0.1, 1.5, True, "0.5", [0.3]]


@pytest.mark.parametrize("bad", BAD_FLOORS)
async def test_bad_min_score_is_invalid_input_and_reads_nothing(
    talked: MemoryStore, bad: Any
) -> None:
    calls = (
        lambda: talked.recall("painting", user_id="alice", min_score=bad),
        lambda: talked.recall_scored("painting", user_id="alice", min_score=bad),
        lambda: talked.recall("", user_id="alice", min_score=bad),
        lambda: talked.recall_facts("painting", user_id="alice", min_score=bad),
        lambda: talked.context(user_id="alice", query="painting", min_score=bad),
    )
    for call in calls:
        with pytest.raises(InvalidInput, match=r"min_score must be None \(no floor\) or a number"):
            await call()
    # A recall that ran would have counted an access of what it returned.
    assert await talked.access_stats(user_id="alice") == []


async def test_search_memory_tool_takes_the_floor(talked: MemoryStore) -> None:
    await talked.add_fact(
        Fact(user_id="alice", subject="alice", predicate="lives_in", object="Lisbon")
    )
    loose = await talked.call_tool("search_memory", {"query": "zzz"}, user_id="alice")
    assert {r["kind"] for r in loose["results"]} == {"fact", "episode"}
    strict = await talked.call_tool(
        "search_memory", {"query": "zzz", "min_score": FLOOR}, user_id="alice"
    )
    assert strict["results"] == []
    found = await talked.call_tool(
        "search_memory", {"query": "Lisbon flight", "min_score": FLOOR}, user_id="alice"
    )
    assert {r["kind"] for r in found["results"]} == {"fact", "episode"}
    for bad, message in ((1.5, "between 0 and 1"), ("high", "of type number"), (True, "number")):
        with pytest.raises(InvalidInput, match=message):
            await talked.call_tool(
                "search_memory", {"query": "x", "min_score": bad}, user_id="alice"
            )


async def test_mcp_get_context_takes_the_floor(talked: MemoryStore) -> None:
    from memstore.mcp.tools import call_mcp_tool

    def kinds(result: dict[str, Any]) -> set[str]:
        return {item["kind"] for item in result["items"]}

    loose = await call_mcp_tool(talked.tenant("alice"), "get_context", {"query": "zzz"})
    assert "episode" in kinds(loose)
    strict = await call_mcp_tool(
        talked.tenant("alice"), "get_context", {"query": "zzz", "min_score": FLOOR}
    )
    assert "episode" not in kinds(strict)
    with pytest.raises(InvalidInput, match="min_score"):
        await call_mcp_tool(talked.tenant("alice"), "get_context", {"min_score": -1})
