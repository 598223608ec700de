"""How the benchmark talks to memstore, tolerant of which features have landed."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import numpy as np

from .data import DIM

__all__ = ["LookupEmbedder", "feature_flags", "migrate", "open_store"]


class LookupEmbedder:
    """Returns precomputed vectors for known texts (a seeded hash vector otherwise).

    Stands in for a real model so the benchmark measures the store, not inference;
    texts the benchmark registered (queries, episode texts) get their workload vector.
    """

    dim = DIM
    name = "bench-lookup"

    def __init__(self) -> None:
        self.known: dict[str, np.ndarray] = {}

    def register(self, text: str, vector: np.ndarray) -> None:
        self.known[text] = vector

    def vector(self, text: str) -> np.ndarray:
        found = self.known.get(text)
        if found is not None:
            return found
        rng = np.random.default_rng(abs(hash(text)) % (2**32))
        v = rng.standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, DIM), "f4")


def feature_flags() -> dict[str, bool]:
    from memstore import MemoryStore

    from .rows import has_episode_embedding

    return {
        "embeddings": has_episode_embedding(),
        "consolidate": hasattr(MemoryStore, "consolidate"),
        "embedder_arg": "embedder" in inspect.signature(MemoryStore.open).parameters,
    }


async def migrate(url: str) -> None:
    from memstore.schema.migrate import upgrade

    await upgrade(url)


@asynccontextmanager
async def open_store(url: str, embedder: Any = None, **options: Any) -> AsyncIterator[Any]:
    from memstore import MemoryStore

    kwargs: dict[str, Any] = dict(options)
    if embedder is not None and feature_flags()["embeddings"]:
        kwargs["embedder"] = embedder
    elif "allow_embedder_change" in inspect.signature(MemoryStore.open).parameters:
        # Opened without the workload's embedder only to read or export; the
        # database records the LookupEmbedder that wrote its vectors.
        kwargs["allow_embedder_change"] = True
    async with MemoryStore.open(url, **kwargs) as store:
        yield store
