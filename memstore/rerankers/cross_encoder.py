"""A sentence-transformers ``CrossEncoder`` as a reranker (optional extra ``embeddings``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstore.core.model_spec import RERANKER, unloadable_model
from memstore.errors import ConfigurationError

__all__ = ["CrossEncoderReranker"]

_MISSING = (
    "CrossEncoderReranker needs the optional extra: pip install 'memstore[embeddings]' "
    "(install torch==2.13.0 first to get the CPU build)"
)


class CrossEncoderReranker:
    """A cross-encoder that reads the query and a text together and gives one score.

    ``model`` is a local directory or a model name (e.g.
    ``cross-encoder/ms-marco-MiniLM-L6-v2``); memstore ships none, the user names
    it. ``HF_HUB_OFFLINE=1`` is set before the library loads, as for
    :class:`~memstore.embeddings.SentenceTransformerEmbedder`, so a name only
    works for a model already in the local cache. The model must have one output
    (a relevance score, as every rerank model has); ``max_length`` caps the word
    pieces read per pair (default: the model's own limit; longer pairs are cut).
    """

    def __init__(
        self,
        model: str | Path,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        max_length: int | None = None,
        identity: str | None = None,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ImportError(_MISSING) from exc
        self.model_name = str(model)
        if not self.model_name.strip():
            raise ConfigurationError(
                f"the cross-encoder model name is empty ({RERANKER.where('model')})",
                setting="reranker",
            )
        try:
            self._model: Any = CrossEncoder(self.model_name, device=device, max_length=max_length)
        except (OSError, ValueError) as error:
            from huggingface_hub import constants

            raise unloadable_model(
                "cross-encoder",
                self.model_name,
                setting="reranker",
                cache=str(constants.HF_HUB_CACHE),
                offline=bool(constants.HF_HUB_OFFLINE),
                cause=error,
            ) from error
        labels = getattr(self._model, "num_labels", 1)
        if labels != 1:
            raise ConfigurationError(
                f"cross-encoder {self.model_name!r} has {labels} outputs; a reranker needs a "
                "model with one relevance score per pair (num_labels=1)",
                setting="reranker",
            )
        self._batch_size = batch_size
        path = Path(model)
        # A directory is named by its last component, so moving it keeps the identity.
        self._identity = identity or f"cross-encoder:{path.name if path.is_dir() else model}"

    @property
    def identity(self) -> str:
        return self._identity

    def rerank_sync(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, higher is more relevant (the model's own activation)."""
        if not texts:
            return []
        scores = self._model.predict(
            [(query, text) for text in texts],
            batch_size=self._batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [float(s) for s in scores]

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        # Inference is CPU-bound and releases the GIL in torch; keep the loop free.
        return await asyncio.to_thread(self.rerank_sync, query, texts)

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_name!r})"
