"""The Reranker protocol and the checks every reranker's answer goes through.

Recall's ranked statement is cheap and good at finding candidates; a reranker
(a cross-encoder, a rerank API) reads the query and each candidate's text
together, which is slower but sees more. Recall hands it its top N and
re-orders them by its scores. Everything here is pure Python: the models and
the HTTP client live in the sibling modules and are imported lazily.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memstore.core.validation import check_identifier
from memstore.errors import InvalidInput, MemstoreError
from memstore.telemetry import model_call

__all__ = [
    "DEFAULT_RERANK_CANDIDATES",
    "MAX_RERANK_CANDIDATES",
    "Reranker",
    "RerankerEndpointError",
    "check_rerank_candidates",
    "check_reranker",
    "reranker_identity",
    "scores_checked",
]

# Candidates recall hands the reranker. On the LoCoMo dev set (docs/RECALL.md, "A
# reranking stage") an ideal re-ordering of the top N reaches recall@10 0.834 at 20,
# 0.865 at 30, 0.885 at 40, 0.901 at 50 and 0.931 at 100: past 50 each further 10
# candidates add under 0.01, while the stage's cost grows with every one.
DEFAULT_RERANK_CANDIDATES = 50
# A reranker scores every candidate on every query: more than this is a mistake,
# not a setting (Cohere's own limit per request is 1,000 documents).
MAX_RERANK_CANDIDATES = 1000


@runtime_checkable
class Reranker(Protocol):
    """Anything with an async ``rerank(query, texts)`` giving one score per text.

    Higher is more relevant; the scale is the reranker's own (logits,
    probabilities), only the order matters to recall. An ``identity`` attribute
    (optional) names the model, as an embedder's does.
    """

    async def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


class RerankerEndpointError(MemstoreError):
    """A rerank endpoint failed (refused, unreachable, timed out, or answered
    something else than scores) after its retries; recall returned nothing."""


def reranker_identity(reranker: object) -> str:
    """The reranker's ``identity`` attribute, else its class's qualified name."""
    value = getattr(reranker, "identity", None)
    if value is None:
        kind = type(reranker)
        return f"{kind.__module__}.{kind.__qualname__}"
    return check_identifier("reranker.identity", value, max_chars=500).strip()


def check_reranker(name: str, value: object) -> Reranker | None:
    """``value`` if it is a :class:`Reranker` (or None); anything else is InvalidInput."""
    if value is None:
        return None
    if not isinstance(value, Reranker) or not inspect.iscoroutinefunction(value.rerank):
        raise InvalidInput(
            f"{name} must be a Reranker (an object with `async def rerank(query, texts)` "
            f"returning one score per text), got {type(value).__name__}"
        )
    return value


def check_rerank_candidates(value: object) -> int:
    """How many of recall's top rows the reranker scores: an integer, 1..1000."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"rerank_candidates must be an integer, got {value!r}")
    if not 1 <= value <= MAX_RERANK_CANDIDATES:
        raise InvalidInput(
            f"rerank_candidates must be between 1 and {MAX_RERANK_CANDIDATES}, got {value}"
        )
    return value


async def scores_checked(reranker: Reranker, query: str, texts: Sequence[str]) -> list[float]:
    """The reranker's scores for ``texts``: exactly one finite number each, else InvalidInput.

    A reranker is asked about at most :data:`MAX_RERANK_CANDIDATES` texts at a time
    (a recall whose ``limit`` is above it asks several times): rerank endpoints refuse
    more in one request, and a reranker's score of a text does not depend on the
    others asked with it.
    """
    scores: list[float] = []
    for start in range(0, len(texts), MAX_RERANK_CANDIDATES):
        chunk = list(texts[start : start + MAX_RERANK_CANDIDATES])
        with model_call("rerank", reranker, len(chunk)):
            scores += await _checked(reranker, query, chunk)
    return scores


async def _checked(reranker: Reranker, query: str, texts: list[str]) -> list[float]:
    found = await reranker.rerank(query, texts)
    if isinstance(found, str | bytes):
        raise InvalidInput("the reranker returned text, not one score per text")
    try:
        scores = [float(s) for s in found]
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInput(f"the reranker returned something that is not numbers: {exc}") from exc
    if len(scores) != len(texts):
        raise InvalidInput(f"the reranker returned {len(scores)} scores for {len(texts)} texts")
    if not all(math.isfinite(s) for s in scores):
        raise InvalidInput("the reranker returned NaN or infinite scores")
    return scores
