"""Hybrid fusion on corpora built for it: how far each list's best stands out, BM25's length."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from memstore import Episode, MemoryStore
from memstore.recall import RecallTuning
from tests.test_hybrid_context import DIM, ChosenEmbedder

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FUSION_ONLY = RecallTuning(neighbour_weight=0.0, session_weight=0.0)
KEYWORD_ONLY = replace(FUSION_ONLY, dense_weight=0.0)


def _unit(cosine: float, rng: np.random.Generator) -> np.ndarray:
    noise = rng.standard_normal(DIM).astype(np.float32)
    noise[0] = 0.0
    noise /= np.linalg.norm(noise)
    v = np.zeros(DIM, dtype=np.float32)
    v[0] = cosine
    return (v + np.sqrt(1 - cosine**2) * noise).astype(np.float32)


def _rows(texts: list[tuple[str, float]]) -> tuple[list[Episode], ChosenEmbedder]:
    rng = np.random.default_rng(11)
    axis = np.zeros(DIM, dtype=np.float32)
    axis[0] = 1.0
    vectors = {text: _unit(cosine, rng) for text, cosine in texts}
    rows = [
        # one session each: only the fusion orders them
        Episode(user_id="u", session_id=f"s{i}", input=t, occurred_at=T0 + timedelta(minutes=i))
        for i, (t, _) in enumerate(texts)
    ]
    return rows, ChosenEmbedder(vectors)


async def test_the_list_whose_best_stands_out_decides(db_url: str) -> None:
    """The keyword list's best is far above its other matches; the dense list's best is
    only the top of a spread. Summed with equal weights, the dense best (which also
    matches a query word) outranks the keyword best; weighted by how far each list's
    best stands out, the keyword best comes first."""
    query = "zebra stripes"
    evidence = "a zebra! the zebra had stripes like no other zebra"
    texts = [
        (evidence, 0.0),
        ("a zebra crossing on the long road through the old town, then a bridge, a park", 0.5),
        *(
            (f"a shirt with stripes, bought one long afternoon in town, number {i}", 0.0)
            for i in range(20)
        ),
        *((f"nothing to see here, item {i}", -0.3 + 0.04 * i) for i in range(20)),
    ]
    rows, embedder = _rows(texts)
    embedder.vectors[query] = np.eye(DIM, dtype=np.float32)[0]
    async with MemoryStore.open(db_url, embedder=embedder, recall_tuning=KEYWORD_ONLY) as store:
        await store.remember_many(rows)
        alone = await store.recall(query, user_id="u", limit=1)
    assert [e.input for e in alone] == [evidence]
    async with MemoryStore.open(db_url, embedder=embedder, recall_tuning=FUSION_ONLY) as store:
        fused = await store.recall_scored(query, user_id="u", limit=2)
    assert fused[0].episode.input == evidence, [(m.episode.input, m.parts) for m in fused]


async def test_a_few_huge_rows_do_not_make_long_rows_ordinary(db_url: str) -> None:
    """BM25 weighs a row's length against the tenant's median, not its mean: three huge
    rows lift the mean until a long row mentioning the term twice outranks a short row
    that is about it; against the median the short row comes first."""
    short = "my quokka photo"
    long = "a long day: " + "we walked and talked, " * 40 + "a quokka, then another quokka"
    texts = [
        (short, 0.0),
        (long, 0.0),
        *((f"errand number {i} in town", 0.0) for i in range(30)),
        *(("a very long diary page: " + "nothing happened today, " * 800, 0.0) for _ in range(3)),
    ]
    rows, embedder = _rows(texts)
    async with MemoryStore.open(db_url, embedder=embedder, recall_tuning=KEYWORD_ONLY) as store:
        await store.remember_many(rows)
        found = await store.recall_scored("quokka", user_id="u", limit=1)
    assert [m.episode.input for m in found] == [short], [m.parts for m in found]


async def test_an_answers_length_is_verbosity(db_url: str) -> None:
    """An agent turn's output is weighed by its length in full (b 1), what was recorded
    by ``BM25_B``: a long answer naming the term four times outranks, with b 0.4 for
    the whole row, the short message whose user names it twice; weighing the answer's
    share of the row as verbosity, the message comes first."""
    told = Episode(
        user_id="u",
        session_id="s-told",
        input="I took a photo of a quokka at the zoo today; the quokka smiled, best day of May",
        output="Lovely!",
        occurred_at=T0,
    )
    answered = Episode(
        user_id="u",
        session_id="s-answered",
        input="tell me about Australian animals",
        output=(
            "Australia has many: the quokka, a small wallaby; the quokka lives on an island; "
            "people take photos with the quokka; the quokka is mostly active at night; "
            "and kangaroos, koalas and wombats"
        ),
        occurred_at=T0 + timedelta(minutes=1),
    )
    errands = [
        Episode(
            user_id="u",
            session_id=f"s{i}",
            input=f"errand number {i:02d} in town",
            output=f"noted, errand {i:02d}",
            occurred_at=T0 + timedelta(minutes=2 + i),
        )
        for i in range(30)
    ]
    async with MemoryStore.open(
        db_url, embedder=ChosenEmbedder({}), recall_tuning=KEYWORD_ONLY
    ) as store:
        await store.remember_many([told, answered, *errands])
        found = await store.recall_scored("quokka", user_id="u", limit=1)
    assert [m.episode.session_id for m in found] == ["s-told"], [m.parts for m in found]
