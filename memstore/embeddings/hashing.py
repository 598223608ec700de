"""A dependency-free, deterministic embedder: hashed word and character n-grams."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from memstore.core.text import words as split_words
from memstore.embeddings.base import DEFAULT_DIM, Fixed, check_dim, normalized

__all__ = ["HashingEmbedder"]


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): Python's string hash is salted per process, and the
    # same text must land on the same vector forever (it is stored).
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder(Fixed):
    """Feature hashing of words, word bigrams and character trigrams.

    Captures lexical overlap (including morphology through the trigrams), not
    meaning; it is the offline default and what the tests use. Stable across
    processes, platforms and versions of Python. A width (``dim``) outside the
    store's bounds (1 to 2000, :data:`~memstore.embeddings.base.MAX_DIM`) is
    :class:`~memstore.errors.ConfigurationError`.
    """

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        self._dim = check_dim(dim, what="the hashing embedder's width (dim)")
        # The features and hash are frozen (vectors are stored); a change to
        # either must bump the version so old databases are refused, not mixed.
        self._identity = f"memstore-hashing-v1/{self._dim}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = split_words(text)
        features = [(f"w:{w}", 1.0) for w in words]
        features += [(f"b:{a} {b}", 0.7) for a, b in pairwise(words)]
        for word in words:
            padded = f"<{word}>"
            features += [(f"c:{padded[i : i + 3]}", 0.3) for i in range(len(padded) - 2)]
        return features

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                index, sign = _bucket(feature, self._dim)
                out[row, index] += sign * weight
        return normalized(out)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"
