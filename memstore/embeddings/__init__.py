"""Embedders: text to fixed-size vectors for semantic recall."""

from memstore.embeddings.base import DEFAULT_DIM, Embedder, QueryEmbedder, embed_checked
from memstore.embeddings.hashing import HashingEmbedder
from memstore.embeddings.openai_api import OpenAIEmbedder
from memstore.embeddings.sentence import SentenceTransformerEmbedder, bundled_minilm_path
from memstore.embeddings.spec import ModelSpec, embedder_from_spec

__all__ = [
    "DEFAULT_DIM",
    "Embedder",
    "HashingEmbedder",
    "ModelSpec",
    "OpenAIEmbedder",
    "QueryEmbedder",
    "SentenceTransformerEmbedder",
    "bundled_minilm_path",
    "embed_checked",
    "embedder_from_spec",
]
