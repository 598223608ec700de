"""Query and document forms: recall and LangGraph search embed queries in the query form,
stored text in the document form, and the database names the forms it was embedded with."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memstore import EmbedderMismatch, Episode, Fact, MemoryStore
from memstore.core.documents import fact_text
from memstore.core.tenancy import storage_user_id
from memstore.embeddings import HashingEmbedder
from memstore.embeddings.base import QueryEmbedder, embed_checked, queries_checked
from memstore.embeddings.forms import instruction_prefixes, with_forms

RETRIEVAL = "Represent this sentence for searching relevant passages: "


class FormedHashing:
    """Hashing vectors, but a query is hashed with a ``query: `` instruction, as e5 reads it."""

    dim = 384
    identity = with_forms(HashingEmbedder().identity, "query: ", "")

    def __init__(self) -> None:
        self.inner = HashingEmbedder()

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_sync(texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_sync([f"query: {t}" for t in texts])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize(
    ("model", "forms"),
    [
        ("intfloat/multilingual-e5-small", ("query: ", "passage: ")),
        ("/models/e5-base-v2", ("query: ", "passage: ")),
        ("BAAI/bge-small-en-v1.5", (RETRIEVAL, "")),
        ("nomic-ai/nomic-embed-text-v1.5", ("search_query: ", "search_document: ")),
        ("BAAI/bge-m3", ("", "")),
        ("sentence-transformers/all-MiniLM-L6-v2", ("", "")),
        (None, ("", "")),
    ],
)
def test_each_family_gets_its_own_instructions(model: str | None, forms: tuple[str, str]) -> None:
    assert instruction_prefixes(model) == forms


async def test_queries_checked_uses_the_query_form_only_where_there_is_one() -> None:
    formed, plain = FormedHashing(), HashingEmbedder()
    assert isinstance(formed, QueryEmbedder) and not isinstance(plain, QueryEmbedder)
    query = (await queries_checked(formed, ["where do I live"]))[0]
    assert np.allclose(query, plain.embed_sync(["query: where do I live"])[0], atol=1e-6)
    assert not np.allclose(query, (await embed_checked(formed, ["where do I live"]))[0])
    same = (await queries_checked(plain, ["where do I live"]))[0]
    assert np.allclose(same, plain.embed_sync(["where do I live"])[0], atol=1e-6)


async def test_recall_scores_episodes_and_facts_with_the_query_form(db_url: str) -> None:
    formed = FormedHashing()
    async with MemoryStore.open(db_url, embedder=formed) as store:
        await store.remember(Episode(session_id="s", user_id="u", input="I live in Berlin"))
        await store.assert_fact(
            Fact(user_id="u", subject="user", predicate="lives_in", object="Berlin")
        )
        (match,) = await store.recall_scored("where do I live", user_id="u", limit=1)
        (fact_match,) = await store.recall_facts_scored("where do I live", user_id="u", limit=1)
    query = formed.inner.embed_sync(["query: where do I live"])[0]
    stored = formed.inner.embed_sync(["I live in Berlin"])[0]
    assert match.parts["dense"] == pytest.approx(cosine(query, stored), abs=1e-4)
    assert fact_match.parts["dense"] == pytest.approx(
        cosine(query, formed.inner.embed_sync([fact_text(fact_match.fact)])[0]), abs=1e-4
    )


async def test_langgraph_search_scores_with_the_query_form(db_url: str) -> None:
    pytest.importorskip("langgraph", reason="LangGraph store items need memstore[langgraph]")
    formed = FormedHashing()
    user = storage_user_id("u")
    async with MemoryStore.open(db_url, embedder=formed) as store:
        items = store.langgraph_items()
        value = {"text": "I live in Berlin"}
        await items.put(user, "notes", "a", value, index_fields=["text"], ttl_minutes=None)
        ((_, score),) = await items.search(
            user, "", query="where do I live", keep=None, offset=0, limit=1, refresh_ttl=False
        )
    query = formed.inner.embed_sync(["query: where do I live"])[0]
    stored = formed.inner.embed_sync(["I live in Berlin"])[0]
    assert score == pytest.approx(cosine(query, stored), abs=1e-4)


async def test_a_database_embedded_with_forms_refuses_an_embedder_without(db_url: str) -> None:
    async with MemoryStore.open(db_url, embedder=FormedHashing()) as store:
        await store.remember(Episode(session_id="s", user_id="u", input="I live in Berlin"))
    with pytest.raises(EmbedderMismatch):
        async with MemoryStore.open(db_url, embedder=HashingEmbedder()):
            pass
