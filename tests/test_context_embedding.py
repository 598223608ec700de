"""context() embeds its query once, however many recalls it runs for it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstore import Episode, Fact, MemoryStore
from memstore.embeddings.hashing import HashingEmbedder

QUERY = "where does the orchid grow best"


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting what it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await super().embed(texts)


async def _seed(store: MemoryStore) -> None:
    await store.remember_many(
        [
            Episode(user_id="u", session_id="old", input=f"orchid note {n}", output="ok")
            for n in range(40)
        ]
    )
    await store.add_fact(Fact(user_id="u", subject="orchid", predicate="grows_in", object="shade"))


async def test_context_embeds_the_query_once(db_url: str) -> None:
    embedder = CountingEmbedder()
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        await _seed(store)
        embedder.texts.clear()
        context = await store.context(user_id="u", session_id="now", query=QUERY)
        assert context.facts and context.episodes
        assert embedder.texts == [QUERY]


async def test_a_second_round_of_recall_reuses_the_vector(db_url: str) -> None:
    embedder = CountingEmbedder()
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        await _seed(store)
        embedder.texts.clear()
        # 400 tokens: the first recall asks for 10 episodes; all of these short ones
        # fit, so it asks again for more.
        context = await store.context(user_id="u", query=QUERY, max_tokens=400)
        assert len(context.episodes) > 10
        assert embedder.texts == [QUERY]
        # A later call embeds again (nothing is kept across calls).
        await store.context(user_id="u", query=QUERY, max_tokens=400)
        assert embedder.texts == [QUERY, QUERY]
