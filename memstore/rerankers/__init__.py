"""Rerankers: a second, slower opinion on recall's top candidates.

``Reranker`` is the protocol recall calls; :class:`CrossEncoderReranker` runs a
sentence-transformers cross-encoder locally (extra ``embeddings``),
:class:`HTTPReranker` calls a rerank endpoint (Cohere, Jina, vLLM, Infinity, TEI;
extra ``rerank``). Both heavy imports happen when one is constructed, never on
``import memstore``.
"""

from memstore.rerankers.base import (
    DEFAULT_RERANK_CANDIDATES,
    MAX_RERANK_CANDIDATES,
    Reranker,
    RerankerEndpointError,
    reranker_identity,
)
from memstore.rerankers.cross_encoder import CrossEncoderReranker
from memstore.rerankers.http import HTTPReranker

__all__ = [
    "DEFAULT_RERANK_CANDIDATES",
    "MAX_RERANK_CANDIDATES",
    "CrossEncoderReranker",
    "HTTPReranker",
    "Reranker",
    "RerankerEndpointError",
    "reranker_identity",
]
