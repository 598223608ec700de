"""Seeded synthetic workload: tenants, topical texts and clustered 384-d embeddings.

Vectors are drawn around per-topic centres and texts from per-topic vocabularies,
so keyword and vector rankings agree roughly, as with real embeddings. Every
chunk is generated from ``(seed, chunk)`` alone, so any process can rebuild
any part of the data set without holding all of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

__all__ = ["DIM", "Chunk", "Workload", "episode_id", "tenant_name"]

DIM = 384
N_TOPICS = 64
BLOCK = 1_000  # rows are generated in blocks of this size, whatever the chunking
WORDS_PER_TOPIC = 40
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "su",
    "ta",
    "ri",
    "po",
    "ve",
    "da",
    "zu",
    "fe",
    "go",
    "hi",
    "ju",
    "be",
    "sa",
    "to",
    "ra",
    "ni",
    "mu",
    "le",
    "ko",
    "pi",
]
_NOISE = 1.1  # spread around a topic centre; cos(vector, centre) is about 0.67
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def tenant_name(index: int) -> str:
    return f"tenant{index:05d}"


def episode_id(seed: int, row: int) -> str:
    return f"ep-{seed:03d}-{row:012d}"


def _normalise(m: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)
    return unit


@dataclass
class Chunk:
    """Rows ``start .. start+len`` of a workload, column-wise."""

    start: int
    tenants: np.ndarray  # int32 tenant index per row
    topics: np.ndarray  # int32 topic per row
    vectors: np.ndarray  # float32 (n, DIM), unit length
    inputs: list[str]
    outputs: list[str]
    occurred: list[datetime]

    def __len__(self) -> int:
        return len(self.inputs)


class Workload:
    """``n_rows`` episodes over ``n_tenants``; tenant 0 holds ``big_share`` of the rows
    (or tenants 0, 1, ... hold the ``leading`` shares)."""

    def __init__(
        self,
        n_rows: int,
        n_tenants: int,
        *,
        seed: int = 7,
        big_share: float = 0.01,
        leading: tuple[float, ...] = (),
    ) -> None:
        self.n_rows, self.n_tenants, self.seed = n_rows, n_tenants, seed
        rng = np.random.default_rng([seed, 0])
        self.centres = _normalise(rng.standard_normal((N_TOPICS, DIM)))
        words = [
            "".join(rng.choice(_SYLLABLES, size=3)) + str(i)
            for i in range(N_TOPICS * WORDS_PER_TOPIC)
        ]
        self.topic_words = [
            words[t * WORDS_PER_TOPIC : (t + 1) * WORDS_PER_TOPIC] for t in range(N_TOPICS)
        ]
        self.common = ["user", "said", "asked", "about", "today", "plan", "note", "agent"]
        # ``leading``: explicit shares of tenants 0, 1, ...; the rest split the remainder.
        shares = leading or (min(max(big_share, 1.0 / n_tenants), 1.0),)
        rest = (1.0 - sum(shares)) / max(1, n_tenants - len(shares))
        self.p_tenant = np.full(n_tenants, rest)
        self.p_tenant[: len(shares)] = shares
        self.p_tenant /= self.p_tenant.sum()

    def _sentence(self, rng: np.random.Generator, topic: int, n: int) -> str:
        own = rng.choice(self.topic_words[topic], size=n - 2)
        other = rng.choice(self.common, size=2)
        return " ".join([*own[: n // 2], *other, *own[n // 2 :]])

    def _block(self, b: int) -> Chunk:
        start = b * BLOCK
        n = max(0, min(BLOCK, self.n_rows - start))
        rng = np.random.default_rng([self.seed, 1, b])
        tenants = rng.choice(self.n_tenants, size=n, p=self.p_tenant).astype(np.int32)
        topics = rng.integers(0, N_TOPICS, size=n).astype(np.int32)
        noise = _normalise(rng.standard_normal((n, DIM))) * _NOISE
        vectors = _normalise(self.centres[topics] + noise) if n else np.zeros((0, DIM), "f4")
        inputs = [self._sentence(rng, int(t), 10) for t in topics]
        outputs = [self._sentence(rng, int(t), 14) for t in topics]
        minutes = rng.integers(0, 60 * 24 * 300, size=n)
        occurred = [EPOCH + timedelta(minutes=int(m)) for m in minutes]
        return Chunk(start, tenants, topics, vectors, inputs, outputs, occurred)

    def chunk(self, index: int, size: int) -> Chunk:
        """Rows ``index*size ..``; the data does not depend on ``size`` (built in blocks)."""
        start, end = index * size, min((index + 1) * size, self.n_rows)
        blocks = (
            [self._block(b) for b in range(start // BLOCK, (end - 1) // BLOCK + 1)]
            if end > start
            else []
        )
        if not blocks:
            return Chunk(
                start,
                np.zeros(0, np.int32),
                np.zeros(0, np.int32),
                np.zeros((0, DIM), np.float32),
                [],
                [],
                [],
            )
        lo = start - blocks[0].start
        hi = lo + (end - start)

        def cat(parts: list[Any], arrays: bool = True) -> Any:  # an array, or a list
            joined = np.concatenate(parts) if arrays else [x for p in parts for x in p]
            return joined[lo:hi]

        return Chunk(
            start,
            cat([b.tenants for b in blocks]),
            cat([b.topics for b in blocks]),
            cat([b.vectors for b in blocks]),
            cat([b.inputs for b in blocks], False),
            cat([b.outputs for b in blocks], False),
            cat([b.occurred for b in blocks], False),
        )

    def chunks(self, size: int = 10_000) -> Iterator[Chunk]:
        for index in range((self.n_rows + size - 1) // size):
            yield self.chunk(index, size)

    def queries(self, tenant: int, n: int, *, salt: int = 0) -> list[tuple[str, np.ndarray]]:
        """``n`` (text, vector) queries for ``tenant`` drawn from random topics."""
        rng = np.random.default_rng([self.seed, 2, tenant, salt])
        out = []
        for _ in range(n):
            topic = int(rng.integers(0, N_TOPICS))
            words = rng.choice(self.topic_words[topic], size=3, replace=False)
            vec = _normalise(self.centres[topic] + _normalise(rng.standard_normal(DIM)) * _NOISE)
            out.append((" ".join(words), vec))
        return out
