"""A small cross-encoder the rerank tests build themselves (no model ships one).

A 2-layer BERT with one output (a rerank model's shape) on the bundled MiniLM's
tokenizer, randomly initialised from a fixed seed with wide weights so that
different texts get clearly different scores. It is saved like any model
directory, and loaded by the code under test from there.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["build_cross_encoder", "model_logits"]


def build_cross_encoder(labels: int = 1) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from memstore.embeddings import bundled_minilm_path

    directory = Path(tempfile.mkdtemp(prefix="memstore-ce-"))
    tokenizer = AutoTokenizer.from_pretrained(str(bundled_minilm_path()))
    torch.manual_seed(31)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=labels,
        initializer_range=0.5,
    )
    BertForSequenceClassification(config).save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return directory


def model_logits(directory: Path, query: str, texts: Sequence[str]) -> list[float]:
    """The model's raw score of each (query, text) pair, computed with transformers alone."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    model = AutoModelForSequenceClassification.from_pretrained(str(directory)).eval()
    batch = tokenizer(
        [query] * len(texts), list(texts), padding=True, truncation=True, return_tensors="pt"
    )
    with torch.no_grad():
        return [float(x) for x in model(**batch).logits[:, 0]]
