"""Words the context benchmarks build their synthetic turns, facts and queries from."""

from __future__ import annotations

import random

__all__ = ["FILLER", "TOPICS", "sentence"]

TOPICS = (
    "paris garden fern coffee python rust violin tokyo train budget meeting invoice "
    "holiday recipe marathon piano kafka postgres orchid camera novel chess hiking "
    "mortgage dentist birthday flight museum pottery spanish guitar yoga tax"
).split()
FILLER = "the a we it and then so maybe about with really think plan next week".split()


def sentence(rng: random.Random, n: int) -> str:
    """``n`` words, about a third of them topics."""
    words = [rng.choice(TOPICS) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(n)]
    return " ".join(words)
