"""The one set of recall weights, read by the statements as they are (no copy, no renames).

Each signal (cosine similarity, BM25) is standardised over its own top
candidates (z-scores), so neither dominates by scale, and summed, each weighted
by how far its list's best stands out (memstore/search/statement.py). Two context
terms follow for episodes, both general properties of conversational memory: a
turn next to a strong hit is often the answer to it (neighbour boost), and a
session with several strong hits is about the topic (session boost, at most the
turn's own positive score). Weights
were chosen on the LoCoMo dev set, see docs/RECALL.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RecallTuning"]


@dataclass(frozen=True)
class RecallTuning:
    depth: int = 200  # candidates taken from each signal
    dense_weight: float = 1.0
    keyword_weight: float = 1.0
    neighbour_weight: float = 0.3
    neighbour_width: int = 2  # turns either side within the same session
    session_weight: float = 0.4
    session_top: int = 2  # session score = mean of its best this-many turns
    expand: int = 50  # best candidates whose neighbours are also scored
    recency_half_life_days: float = 30.0
    # Long episodes are scored by their best passage among the this-many rows most
    # similar by whole text (all rows of a tenant that has fewer): bounds the cost
    # of passages in large tenants, the same rule on both backends.
    passage_pool: int = 500
    # A passage lifts its episode only by what it beats the whole text by, less
    # this margin: a long text has many passages, so many chances of one matching
    # by accident (long assistant answers outranked the short user messages that
    # held the evidence, docs/RECALL.md "What a long text costs").
    passage_margin: float = 0.05
