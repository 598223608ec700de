"""The reranking stage: recall's top candidates re-ordered by a :class:`Reranker`'s scores.

It runs after the ranked statement and before the relevance cut, on rows
already read: no statement of its own. Off (no reranker), recall never calls
anything here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from memstore.core.documents import date_words, episode_text
from memstore.rerankers.base import Reranker, scores_checked
from memstore.types import Episode, Fact

__all__ = ["episode_rerank_text", "reranked"]

_Row = TypeVar("_Row", Episode, Fact)


def episode_rerank_text(episode: Episode) -> str:
    """What the reranker reads of an episode: the day it happened, then its text.

    The date goes first: a cross-encoder cuts long texts at its window, and
    "when did ..." questions need the date more than a long text's tail.
    """
    return f"{date_words(episode.occurred_at)}: {episode_text(episode)}"


async def reranked(
    reranker: Reranker,
    query: str,
    ranked: Sequence[tuple[_Row, float, dict[str, float]]],
    text_of: Callable[[_Row], str],
) -> list[tuple[_Row, float, dict[str, float]]]:
    """``ranked`` re-ordered by the reranker's score, best first, which each row
    carries as ``parts["rerank"]``; ties keep the ranking's order."""
    scores = await scores_checked(reranker, query, [text_of(row) for row, _, _ in ranked])
    order = sorted(range(len(ranked)), key=lambda i: -scores[i])
    return [(ranked[i][0], ranked[i][1], {**ranked[i][2], "rerank": scores[i]}) for i in order]
