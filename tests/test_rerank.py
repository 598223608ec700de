"""The reranking stage: recall's top N re-ordered by a Reranker.

The rerankers here are real implementations of the protocol (pure functions of
the text), so the expected order can be computed beside the store; the model-
and server-backed rerankers have their own tests (test_rerank_cross_encoder.py,
test_rerank_http.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from memstore import Episode, Fact, InvalidInput, MemoryStore
from memstore.recall.rerank import episode_rerank_text
from memstore.rerankers import MAX_RERANK_CANDIDATES, reranker_identity
from tests.sent_sql import every_statement

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEXTS = [
    "We booked the holiday trip to Lisbon for June",
    "The flight to Lisbon leaves at seven in the morning, gate twelve, terminal two",
    "Lisbon hotel: two nights near the river",
    "I need to buy groceries before the trip to Lisbon: milk, bread, eggs and coffee",
    "Our dog Biscuit chewed the sofa again",
    "My first painting was a sunset over the harbour",
]


class ShortestFirst:
    """Scores a text by minus its length: the order is easy to compute beside the store."""

    identity = "test:shortest-first"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        return [-float(len(t)) for t in texts]


class Broken:
    """Answers ``answer`` whatever it is asked."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def rerank(self, query: str, texts: Sequence[str]) -> Any:
        return self.answer(texts) if callable(self.answer) else self.answer


class NotAsync:
    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.0] * len(texts)


async def _remember(store: MemoryStore) -> None:
    # Fixed ids: the statements of two stores over the same rows can be compared.
    await store.remember_many(
        [
            Episode(id=f"e{i}", session_id=f"s{i}", user_id="alice", input=t, occurred_at=T0)
            for i, t in enumerate(TEXTS)
        ]
    )


@pytest.fixture
def ranker() -> ShortestFirst:
    return ShortestFirst()


async def test_top_candidates_come_back_in_the_rerankers_order(
    db_url: str, ranker: ShortestFirst
) -> None:
    async with MemoryStore.open(db_url, reranker=ranker, rerank_candidates=4) as store:
        await _remember(store)
        plain = await store.recall_scored("Lisbon trip", user_id="alice", limit=4, rerank=False)
        assert ranker.calls == []
        got = await store.recall_scored("Lisbon trip", user_id="alice", limit=2)
    # The reranker saw the ranking's top 4 (the date first, then the text), in that order.
    assert ranker.calls == [("Lisbon trip", [episode_rerank_text(m.episode) for m in plain])]
    expected = sorted(plain, key=lambda m: len(episode_rerank_text(m.episode)))[:2]
    assert [m.episode.id for m in got] == [m.episode.id for m in expected]
    assert [m.episode.id for m in got] != [m.episode.id for m in plain[:2]]  # it did re-order
    for match in got:
        assert match.parts["rerank"] == -len(episode_rerank_text(match.episode))
        # score stays the row's relevance; the ranking's parts stay beside the reranker's.
        assert match.score == match.parts["relevance"]
        assert "ranking" in match.parts
    assert "rerank" not in plain[0].parts


async def test_per_call_reranker_and_limit_above_the_candidates(store: MemoryStore) -> None:
    await _remember(store)
    ranker = ShortestFirst()
    # The store has no reranker: the call's is used; limit 6 > candidates keeps 6 rows.
    got = await store.recall("Lisbon", user_id="alice", limit=6, rerank=ranker)
    assert len(ranker.calls) == 1 and len(ranker.calls[0][1]) == 6
    assert [len(episode_rerank_text(e)) for e in got] == sorted(
        len(episode_rerank_text(e)) for e in got
    )
    assert await store.recall("Lisbon", user_id="alice", limit=6) != got  # no default


async def test_facts_are_reranked_too(db_url: str, ranker: ShortestFirst) -> None:
    async with MemoryStore.open(db_url, reranker=ranker, rerank_candidates=3) as store:
        for obj in ("Lisbon", "the old town of Lisbon by the river", "Lisbon, Portugal"):
            await store.add_fact(
                Fact(subject=f"trip {obj}", predicate="goes_to", object=obj, user_id="alice")
            )
        plain = await store.recall_facts_scored("Lisbon", user_id="alice", rerank=False)
        got = await store.recall_facts_scored("Lisbon", user_id="alice", limit=3)
    texts = ranker.calls[0][1]
    assert len(texts) == 3
    assert [m.fact.fact_id for m in got] == [
        m.fact.fact_id
        for m in sorted(plain[:3], key=lambda m: len(f"{m.fact.subject} goes to {m.fact.object}"))
    ]
    assert all(
        m.parts["rerank"] == -len(t) for m, t in zip(got, sorted(texts, key=len), strict=True)
    )


@contextmanager
def _capture() -> Iterator[list[tuple[str, Any]]]:
    """Statements of every engine of the process meanwhile (the store's only)."""
    seen: list[tuple[str, Any]] = []

    with every_statement(lambda sql, params: seen.append((sql, repr(params)))):
        yield seen


def _masked(params: str, ids: list[str]) -> str:
    for found in ids:
        params = params.replace(found, "<id>")
    return params


async def test_off_costs_nothing(db_url: str, ranker: ShortestFirst) -> None:
    """Without a reranker (none configured, or rerank=False) recall runs exactly the
    statements it ran before the stage existed: same SQL, same bound values, and the
    reranker is never called. On, it runs as many statements, asking for N rows."""
    runs: dict[str, list[tuple[str, Any]]] = {}
    with_ranker = {"reranker": ranker, "rerank_candidates": 40}
    # "none" has the default candidates (50), "off" 40: were N used while off, the
    # bound values would differ.
    for name, options, rerank in (
        ("none", {}, None),
        ("off", with_ranker, False),
        ("on", with_ranker, None),
    ):
        # A fixed clock: "now" is a bound value of the statements.
        async with MemoryStore.open(db_url, **options, clock=lambda: T0) as store:
            await store.forget(user_id="alice")
            await _remember(store)
            await store.add_fact(
                Fact(subject="trip", predicate="goes_to", object="Lisbon", user_id="alice")
            )
            await store.flush_access()
            with _capture() as seen:
                for query in ("Lisbon trip", "dog"):
                    await store.recall(query, user_id="alice", limit=3, rerank=rerank)
                    await store.recall_facts(query, user_id="alice", limit=3, rerank=rerank)
            # The fact's ids are made by the store: the same placeholder in every run.
            ids = [i for f in await store.facts(user_id="alice") for i in (f.id, f.fact_id) if i]
            runs[name] = [(sql, _masked(params, ids)) for sql, params in seen]
    assert runs["none"] == runs["off"]
    assert len(ranker.calls) == 4  # the "on" run's only
    # On: as many statements, not the same (N rows asked for instead of 3).
    assert len(runs["on"]) == len(runs["off"])
    assert runs["on"] != runs["off"]


async def test_empty_query_is_not_reranked(db_url: str, ranker: ShortestFirst) -> None:
    async with MemoryStore.open(db_url, reranker=ranker) as store:
        await _remember(store)
        assert len(await store.recall("", user_id="alice", limit=3)) == 3
    assert ranker.calls == []


@pytest.mark.parametrize(
    "options",
    [
        {"reranker": object()},
        # (A name, "cross-encoder", is a ModelSpec: tests/test_rerank_cross_encoder.py.)
        {"reranker": NotAsync()},
        {"rerank_candidates": 0},
        {"rerank_candidates": 1001},
        {"rerank_candidates": True},
        {"rerank_candidates": 2.5},
    ],
)
async def test_bad_store_options_are_refused_at_open(db_url: str, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        async with MemoryStore.open(db_url, **options):
            pass


@pytest.mark.parametrize("rerank", [True, "yes", object(), NotAsync()])
async def test_bad_rerank_argument_is_refused_before_any_io(
    store: MemoryStore, rerank: Any
) -> None:
    await _remember(store)
    for call in (store.recall, store.recall_scored, store.recall_facts, store.recall_facts_scored):
        with pytest.raises(InvalidInput):
            await call("Lisbon", user_id="alice", rerank=rerank)


@pytest.mark.parametrize(
    "answer",
    [
        lambda texts: [1.0] * (len(texts) - 1),  # one score short
        lambda texts: [1.0] * (len(texts) + 1),
        lambda texts: [math.nan] * len(texts),
        lambda texts: [math.inf] + [0.0] * (len(texts) - 1),
        lambda texts: ["high"] * len(texts),
        "0.5",
        None,
    ],
)
async def test_bad_reranker_answers_are_refused_and_nothing_is_recorded(
    store: MemoryStore, answer: Any
) -> None:
    await _remember(store)
    ids = [e.id for e in await store.recall("Lisbon", user_id="alice", limit=6, rerank=False)]
    before = await store.access_counts("episode", ids, user_id="alice")
    with pytest.raises(InvalidInput):
        await store.recall("Lisbon", user_id="alice", rerank=Broken(answer))
    assert await store.access_counts("episode", ids, user_id="alice") == before


def test_identity() -> None:
    assert reranker_identity(ShortestFirst()) == "test:shortest-first"
    assert reranker_identity(Broken(None)) == f"{__name__}.Broken"


def test_rerank_answers_are_read_by_index() -> None:
    """Both answer shapes (the server test covers Cohere's through Infinity; no TEI server
    installs from the package index, so its shape is checked here)."""
    pytest.importorskip("httpx")
    from memstore.rerankers import HTTPReranker, RerankerEndpointError

    tei = HTTPReranker("m", base_url="http://127.0.0.1:9", flavor="tei")
    cohere = HTTPReranker("m", base_url="http://127.0.0.1:9")
    assert tei.scores_from([{"index": 1, "score": 0.2}, {"index": 0, "score": 0.9}], 2) == [
        0.9,
        0.2,
    ]
    answer = {
        "results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}]
    }
    assert cohere.scores_from(answer, 2) == [0.9, 0.2]
    for bad in (
        {"results": [{"index": 0, "relevance_score": 0.9}]},  # one of two scored
        {"results": [{"index": 0, "relevance_score": 0.9}] * 2},  # repeated
        {"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 1}]},
        {"results": [{"index": "0", "relevance_score": 0.9}, {"index": 1, "relevance_score": 1}]},
        {"data": []},
        [{"index": 0, "score": 0.9}, {"index": 1, "score": 0.1}],  # TEI's shape
    ):
        with pytest.raises(RerankerEndpointError):
            cohere.scores_from(bad, 2)


async def test_a_recall_past_the_candidate_limit_asks_in_batches(store: MemoryStore) -> None:
    # 1,200 rows reranked: no call holds more than the 1,000 a rerank endpoint takes,
    # and every row is still scored and ordered by its score.
    await store.remember_many(
        [
            Episode(session_id="s", user_id="alice", input=f"Lisbon note {'x' * (i % 97)} {i}")
            for i in range(1200)
        ]
    )
    ranker = ShortestFirst()
    got = await store.recall_scored("Lisbon note", user_id="alice", limit=1200, rerank=ranker)
    assert [len(texts) for _, texts in ranker.calls] == [MAX_RERANK_CANDIDATES, 200]
    assert len(got) == 1200
    scores = [m.parts["rerank"] for m in got]
    assert scores == sorted(scores, reverse=True)
