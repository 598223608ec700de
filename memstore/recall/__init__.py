"""Hybrid recall: dense vectors and BM25 keywords fused, on SQLite and Postgres."""

from memstore.recall.backends import backend_for
from memstore.recall.fusion import RecallTuning
from memstore.recall.hybrid import HybridRecall
from memstore.recall.search import SearchBackend

__all__ = ["HybridRecall", "RecallTuning", "SearchBackend", "backend_for"]
