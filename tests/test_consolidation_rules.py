"""The rule-based extractor on realistic sentences (pure: no database involved)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from memstore import Episode
from memstore.services.consolidation import RuleExtractor
from memstore.services.consolidation.dates import resolve_date

SPOKEN = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday


def facts(text: str) -> set[tuple[str, str]]:
    return {(p, o) for _s, p, o, _c, _v in RuleExtractor().extract_text(text, spoken=SPOKEN)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Hi, I'm Alice. I just moved to Paris for a job at Acme.",
            {("name", "Alice"), ("lives_in", "Paris"), ("works_at", "Acme")},
        ),
        (
            "My name is Jean-Luc Picard and I live in La Barre.",
            {("name", "Jean-Luc Picard"), ("lives_in", "La Barre")},
        ),
        ("Call me Ishmael.", {("name", "Ishmael")}),
        ("Bob here. I work on Rust compilers.", {("name", "Bob")}),
        ("Big news: I relocated to London.", {("lives_in", "London")}),
        ("I'm based in New York City these days.", {("lives_in", "New York City")}),
        ("I grew up in Lyon.", {("hometown", "Lyon")}),
        ("I was born in Kraków.", {("born_in", "Kraków")}),
        (
            "I\u2019m a software engineer at Google.",  # typographic apostrophe
            {("job_title", "software engineer"), ("works_at", "Google")},
        ),
        ("I work as a nurse.", {("job_title", "nurse")}),
        ("I joined Stripe last month.", {("works_at", "Stripe")}),
        ("I work for the NHS.", {("works_at", "the NHS")}),
        (
            "I hate cilantro, but I love Thai food.",
            {("dislikes", "cilantro"), ("likes", "Thai food")},
        ),
        ("I don't like horror movies.", {("dislikes", "horror movies")}),
        ("I love the bakeries near my flat.", {("likes", "bakeries near my flat")}),
        ("I'm a big fan of jazz.", {("likes", "jazz")}),
        ("I'm allergic to peanuts.", {("allergic_to", "peanuts")}),
        ("My wife Sarah is a doctor.", {("married_to", "Sarah")}),
        ("My sister is called Emma.", {("sister", "Emma")}),
        ("My boss is Mark Smith.", {("boss", "Mark Smith")}),
        ("I'm married to Tom.", {("married_to", "Tom")}),
        ("I have a dog named Rex.", {("owns", "dog named Rex")}),
        ("I own two cats.", {("owns", "two cats")}),
        ("I bought a new bike yesterday.", {("owns", "new bike")}),
    ],
)
def test_extracts_common_personal_facts(text: str, expected: set[tuple[str, str]]) -> None:
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Should I move to Berlin?",
        "If I moved to Berlin I'd be happy.",
        "I have never lived in Rome.",
        "I don't live in Paris anymore.",
        "I have a meeting tomorrow.",
        "I like it.",
        "I'm tired.",
        "We love our new house.",
        "Do you like jazz?",
        "Would I enjoy Lisbon?",
    ],
)
def test_ignores_questions_conditionals_negations_and_noise(text: str) -> None:
    assert facts(text) == set()


def test_plans_carry_a_resolved_date_and_expire_after_it() -> None:
    found = RuleExtractor().extract_text(
        "I'm flying to Lisbon on June 3. I'm going to visit my parents next weekend.", spoken=SPOKEN
    )
    plans = {(o, v) for _s, p, o, _c, v in found if p == "plans"}
    assert plans == {
        ("flying to Lisbon on 2026-06-03", datetime(2026, 6, 4, tzinfo=UTC)),
        ("visit my parents on 2026-03-14", datetime(2026, 3, 15, tzinfo=UTC)),
    }


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("on June 3", date(2026, 6, 3)),
        ("June 3rd, 2027", date(2027, 6, 3)),
        ("on the 5th of May", date(2026, 5, 5)),
        ("on 1 February", date(2027, 2, 1)),  # already past this year: next year's
        ("tomorrow", date(2026, 3, 3)),
        ("next friday", date(2026, 3, 6)),
        ("on Monday", date(2026, 3, 9)),
        ("in August", date(2026, 8, 1)),
        ("next month", date(2026, 4, 1)),
        ("2026-07-01", date(2026, 7, 1)),
        ("this weekend", date(2026, 3, 7)),
    ],
)
def test_date_phrases(phrase: str, expected: date) -> None:
    assert resolve_date(phrase, SPOKEN) == expected


async def test_first_person_resolves_to_the_speaking_user() -> None:
    episodes = [
        Episode(
            user_id="alice",
            session_id="s",
            occurred_at=SPOKEN,
            input="I live in Oslo.",
            output="I live in the cloud.",
        ),  # the assistant's words are not read
        Episode(
            user_id=None,
            session_id="s",
            occurred_at=SPOKEN + timedelta(days=1),
            input="I love tea.",
        ),
    ]
    found = await RuleExtractor().extract(episodes)
    assert [(c.subject, c.predicate, c.object, c.valid_from, c.episode_id) for c in found] == [
        ("alice", "lives_in", "Oslo", SPOKEN, episodes[0].id),
        ("user", "likes", "tea", SPOKEN + timedelta(days=1), episodes[1].id),
    ]


async def test_is_deterministic() -> None:
    episodes = [
        Episode(
            user_id="u",
            session_id="s",
            occurred_at=SPOKEN,
            input="Hi, I'm Ann. I love jazz and I work at Initech. I own a boat.",
        )
    ]
    first = await RuleExtractor().extract(episodes)
    assert first == await RuleExtractor().extract(episodes)
    assert len(first) == 4
