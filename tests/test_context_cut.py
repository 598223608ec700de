"""A context carries every turn of recall's ranking cut at its budget, on any corpus.

The cut: ``recall_scored(q)``'s ranking taken in order while each turn, costing its
bare text (what was said, counted by the context's counter) plus 8, fits the
budget. A turn's line in a context costs at most that (handle, date header,
arrow), and the frame (memory tags, section title, the chat message's overhead),
which the cut does not pay, is paid by clipping the longest packed turns, never by
leaving a ranked turn out. The corpora here are the worst case for headers: every
turn its own session and day (in some, its own year), of mixed lengths, one- and
two-sided; the budgets go down to where the frame is a tenth of the budget.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from memstore import Episode, MemoryStore
from memstore.services.agent import ApproxTokenCounter
from tests.minilm_tokens import minilm_counter
from tests.test_context_budget import ranking_prefix

WORDS = (
    "fern garden violin Lisbon migration report knee physio sourdough bread pasta tomato "
    "basil marathon tram castle passport insurance recital compost lavender manager "
    "billing Postgres offsite dumplings allergy scales concert yoga dentist"
).split()
T0 = datetime(2021, 1, 4, 9, 0, tzinfo=UTC)
DAY_BUDGETS = (200, 300, 500, 1000, 2000)
# A year on every header costs 2 tokens more per turn: from 500 the frame is paid.
YEAR_BUDGETS = (500, 1000, 2000)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def corpus(user_id: str, seed: int, *, year_each: bool) -> list[Episode]:
    """Turns of 1 to 150 words, every one in its own session and on its own day."""
    rng = random.Random(seed)
    out = []
    for n in range(rng.randint(20, 60)):
        words = rng.choice((rng.randint(1, 12), rng.randint(5, 40), rng.randint(30, 150)))
        when = T0.replace(year=T0.year + n) if year_each else T0 + timedelta(days=n)
        out.append(
            Episode(
                user_id=user_id,
                session_id=f"s{n}",
                input=sentence(rng, words),
                output=sentence(rng, rng.randint(1, 12)) if rng.random() < 0.4 else "",
                occurred_at=when,
            )
        )
    return out


CASES = [(seed, False, DAY_BUDGETS) for seed in range(8)] + [
    (seed, True, YEAR_BUDGETS) for seed in range(8, 12)
]


async def test_the_context_carries_the_whole_cut_of_recalls_ranking(store: MemoryStore) -> None:
    count = ApproxTokenCounter().count
    tokenizer = minilm_counter()
    checked = 0
    for seed, year_each, budgets in CASES:
        user = f"u{seed}"
        episodes = corpus(user, seed, year_each=year_each)
        await store.remember_many(episodes)
        query = sentence(random.Random(-seed), 3)
        # Muted: accesses would lift what earlier contexts packed (the access prior).
        with store.reads_unrecorded():
            ranked = [
                m.episode
                for m in await store.recall_scored(query, user_id=user, limit=len(episodes))
            ]
            for budget in budgets:
                cut = ranking_prefix(ranked, budget)
                ctx = await store.context(user_id=user, query=query, max_tokens=budget)
                carried = {i.id.removeprefix("episode:") for i in ctx.episodes}
                missing = [n for n, e in enumerate(cut) if e not in carried]
                assert not missing, (
                    f"seed {seed} at {budget} tokens: the cut holds {len(cut)} turns, "
                    f"the context {len(carried)}; it lacks the cut's turns at ranks {missing}"
                )
                assert count(ctx.render()) <= ctx.used_tokens <= budget
                messages = sum(count(m["content"]) + 4 for m in ctx.to_messages())
                assert messages <= budget
                # A plugged tokenizer's budget holds in its own tokens.
                plugged = await store.context(
                    user_id=user, query=query, max_tokens=budget, counter=tokenizer
                )
                assert tokenizer(plugged.render()) <= budget
                checked += len(cut)
    assert checked > 200  # the cuts are not trivially short


@pytest.mark.parametrize("budget", [200, 500, 2000])
async def test_a_cut_of_one_long_turn_is_carried(store: MemoryStore, budget: int) -> None:
    """A single turn of budget - 8 tokens (a long chat message): the cut holds it,
    and so does the context, clipped by what the frame costs."""
    count = ApproxTokenCounter().count
    said = " ".join(["word"] * (budget - 8))
    assert count(said) + 8 == budget
    await store.remember_many(
        [
            Episode(user_id="alice", session_id="long", input=said, occurred_at=T0),
            Episode(
                user_id="alice",
                session_id="other",
                input="A short note about something else.",
                occurred_at=T0 + timedelta(days=1),
            ),
        ]
    )
    ctx = await store.context(user_id="alice", query=said, max_tokens=budget)
    long = [i for i in ctx.episodes if i.text.startswith("word")]
    assert len(long) == 1 and long[0].truncated
    assert count(ctx.render()) <= budget
