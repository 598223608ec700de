"""Merging ranked lists of different kinds (facts, episodes) on their common score.

Every recalled fact and episode has a ``score`` on one scale, its relevance to the
query (0..1, docs/RECALL.md), but each kind comes in its own ranking's order,
which weighs more than relevance (BM25's rare terms, an episode's neighbours and
session), so a list's scores need not descend. :func:`merge_by_score` keeps
each list's order and interleaves the lists by score: at every step it takes
the head with the highest score, the earlier list on a tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["merge_by_score"]

T = TypeVar("T")


def merge_by_score(lists: Sequence[Sequence[T]], score: Callable[[T], float]) -> list[T]:
    """One list of all items: each input's order kept, heads taken best score first."""
    heads = [0] * len(lists)
    out: list[T] = []
    while True:
        best: int | None = None
        for n, items in enumerate(lists):
            if heads[n] < len(items) and (
                best is None or score(items[heads[n]]) > score(lists[best][heads[best]])
            ):
                best = n
        if best is None:
            return out
        out.append(lists[best][heads[best]])
        heads[best] += 1
