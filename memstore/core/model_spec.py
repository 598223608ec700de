"""A model named by configuration, the same way for embedders and rerankers.

``MemoryStore.open(embedder=..., reranker=...)``, the environment
(``MEMSTORE_EMBEDDER*``, ``MEMSTORE_RERANKER*``) and the CLI's options all carry
a name and its options as a :class:`ModelSpec`; each model family builds from it
(:func:`memstore.embeddings.spec.embedder_from_spec`,
:func:`memstore.rerankers.spec.reranker_from_spec`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from memstore.errors import ConfigurationError

__all__ = ["ModelSpec"]


@dataclass(frozen=True)
class ModelSpec:
    """A model named by configuration: which kind (``name``) and its options.

    ``model``: the sentence-transformers directory or hub name, or the endpoint's model
    name; ``base_url``: the OpenAI-compatible endpoint; ``dim``: the hashing width, or the
    ``dimensions`` an endpoint is asked for. No API key: keys come from the environment
    (or an argument of the embedder itself) and never sit in a value that gets printed.
    """

    name: str
    model: str | None = None
    base_url: str | None = None
    dim: int | None = None

    @classmethod
    def from_env(
        cls, prefix: str = "MEMSTORE_EMBEDDER", env: Mapping[str, str] | None = None
    ) -> ModelSpec | None:
        """``$PREFIX`` (the name), ``$PREFIX_MODEL``, ``$PREFIX_BASE_URL``, ``$PREFIX_DIM``;
        None when ``$PREFIX`` is unset or empty."""
        env = os.environ if env is None else env
        name = (env.get(prefix) or "").strip()
        if not name:
            return None
        dim_text = (env.get(f"{prefix}_DIM") or "").strip()
        try:
            dim = int(dim_text) if dim_text else None
        except ValueError as error:
            raise ConfigurationError(
                f"{prefix}_DIM must be an integer, got {dim_text!r}", setting=f"{prefix}_DIM"
            ) from error
        return cls(
            name=name,
            model=env.get(f"{prefix}_MODEL") or None,
            base_url=env.get(f"{prefix}_BASE_URL") or None,
            dim=dim,
        )
