"""Embedders: text to fixed-size vectors for semantic recall."""

from memstore.embeddings.base import DEFAULT_DIM, Embedder, embed_checked
from memstore.embeddings.hashing import HashingEmbedder
from memstore.embeddings.sentence import SentenceTransformerEmbedder, bundled_minilm_path

__all__ = [
    "DEFAULT_DIM",
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "bundled_minilm_path",
    "embed_checked",
]
