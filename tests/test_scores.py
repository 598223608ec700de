"""One meaning per score.

``score`` of every recalled episode and fact is its relevance to the query, 0..1,
the number ``min_score`` is compared with; where facts and episodes are merged
(the ``search_memory`` tool, also as the MCP server runs it, and ``context``) they
are merged on it. The order stays the ranking's (``parts["ranking"]``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstore import Episode, Fact, MemoryStore
from memstore.mcp.tools import call_mcp_tool
from memstore.services.agent.context import ItemKind, pack

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FLOORS = (0.0, 0.2, 0.35, 0.5, 0.8, 1.0)
QUERIES = ("ramen", "what is the cat called", "marathon training", "zzz", "Miso the cat")


def ep(text: str, output: str = "", session: str = "s1") -> Episode:
    return Episode(session_id=session, user_id="alice", input=text, output=output, occurred_at=T0)


# examples/quickstart.py's conversation, which printed "score 1.64".
QUICKSTART = [
    ep("I adopted a cat named Miso.", "Miso is a lovely name!"),
    ep("My favourite food is ramen.", "Noted: ramen."),
    ep("I'm training for a marathon.", "Good luck with the training!", session="s2"),
]


async def test_recall_scores_are_relevance_and_agree_with_min_score(store: MemoryStore) -> None:
    await store.remember_many(QUICKSTART)
    for query in QUERIES:
        plain = await store.recall_scored(query, user_id="alice", limit=3)
        assert plain, query
        for m in plain:
            assert 0.0 <= m.score <= 1.0, (query, m.score)
            assert m.score == m.parts["relevance"]
        # The order is the ranking's, reported as a part; the floor does not change it.
        ranking = [m.parts["ranking"] for m in plain]
        assert ranking == sorted(ranking, reverse=True)
        assert [m.episode.id for m in plain] == [
            e.id for e in await store.recall(query, user_id="alice", limit=3)
        ]
        for floor in FLOORS:
            kept = await store.recall_scored(query, user_id="alice", limit=3, min_score=floor)
            # min_score keeps exactly the rows whose score reaches it, in the same order.
            assert [(m.episode.id, m.score) for m in kept] == [
                (m.episode.id, m.score) for m in plain if m.score >= floor
            ], (query, floor)
    best = await store.recall_scored("ramen", user_id="alice", limit=1)
    assert best[0].episode.input == "My favourite food is ramen."
    assert best[0].score == 1.0  # every query term is in it


async def test_fact_scores_are_relevance_on_the_episodes_scale(store: MemoryStore) -> None:
    for obj in ("ramen", "Lisbon", "a red bicycle"):
        await store.add_fact(Fact(user_id="alice", subject="alice", predicate="likes", object=obj))
    for query in ("ramen", "where does alice like to travel", "zzz"):
        plain = await store.recall_facts_scored(query, user_id="alice", limit=3)
        assert [m.fact.id for m in plain] == [
            f.id for f in await store.recall_facts(query, user_id="alice", limit=3)
        ]
        for m in plain:
            assert 0.0 <= m.score <= 1.0, (query, m.score)
            assert m.score == m.parts["relevance"]
        for floor in FLOORS:
            kept = await store.recall_facts_scored(query, user_id="alice", limit=3, min_score=floor)
            assert all(m.score >= floor for m in kept), (query, floor)
            assert [
                f.id
                for f in await store.recall_facts(query, user_id="alice", limit=3, min_score=floor)
            ] == [m.fact.id for m in kept]
    ramen = await store.recall_facts_scored("ramen", user_id="alice", limit=1)
    assert ramen[0].fact.object == "ramen" and ramen[0].score == 1.0


async def seeded_cat(store: MemoryStore) -> None:
    """One episode about the cat and one unrelated fact: the MCP session of the issue."""
    await store.remember(ep("I adopted a cat named Miso.", "Miso is a lovely name!"))
    await store.add_fact(Fact(user_id="alice", subject="alice", predicate="likes", object="ramen"))


@pytest.mark.parametrize("kind", ["all", None])
async def test_search_memory_ranks_the_matching_episode_above_an_unrelated_fact(
    store: MemoryStore, kind: str | None
) -> None:
    await seeded_cat(store)
    arguments = {"query": "cat"} if kind is None else {"query": "cat", "kind": kind}
    # As the MCP server runs the tool, and as an agent's call_tool does.
    for found in (
        await call_mcp_tool(store.tenant("alice"), "search_memory", arguments),
        await store.call_tool("search_memory", arguments, user_id="alice"),
    ):
        results = found["results"]
        (episode,) = [r for r in results if r["kind"] == "episode"]
        (fact,) = [r for r in results if r["kind"] == "fact"]
        assert "Miso" in episode["text"]
        # Both on one scale: the matching row is fully relevant, never 0.0.
        assert episode.get("score") == 1.0
        assert 0.0 <= fact.get("score", -1) < episode["score"]
        assert results == [episode, fact]


async def test_search_memory_scores_every_result_on_one_scale(store: MemoryStore) -> None:
    await store.remember_many(QUICKSTART)
    for obj in ("ramen", "Lisbon"):
        await store.add_fact(Fact(user_id="alice", subject="alice", predicate="likes", object=obj))
    for query in QUERIES:
        results = (await store.call_tool("search_memory", {"query": query}, user_id="alice"))[
            "results"
        ]
        assert results, query
        assert all(0.0 <= r["score"] <= 1.0 for r in results), results
        for floor in (0.35, 0.8):
            kept = await store.call_tool(
                "search_memory", {"query": query, "min_score": floor}, user_id="alice"
            )
            assert all(r["score"] >= floor for r in kept["results"]), (query, floor)
        # Merged by score, each kind in its own ranking's order.
        for kind in ("fact", "episode"):
            alone = await store.call_tool(
                "search_memory", {"query": query, "kind": f"{kind}s"}, user_id="alice"
            )
            assert [r["id"] for r in results if r["kind"] == kind] == [
                r["id"] for r in alone["results"]
            ]


async def test_context_puts_the_matching_episode_before_an_unrelated_fact(
    store: MemoryStore,
) -> None:
    await seeded_cat(store)
    with store.reads_unrecorded():
        full = await store.context(user_id="alice", query="cat", max_tokens=10_000)
        ordered = sorted(full.items, key=lambda i: i.priority)
        assert [i.kind for i in ordered] == [ItemKind.EPISODE, ItemKind.FACT]
        assert ordered[0].score == 1.0
        assert ordered[1].score is not None and 0.0 <= ordered[1].score < 1.0
        # A budget for the episode alone holds the one about the cat, whole.
        budget = pack(ordered[:1], 10_000).used_tokens
        tight = await store.context(user_id="alice", query="cat", max_tokens=budget)
        assert [(i.kind, i.truncated) for i in tight.items] == [(ItemKind.EPISODE, False)]
