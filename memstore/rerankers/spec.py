"""One way to name a reranker: ``MemoryStore.open``, the environment and the CLI.

The same shape as the embedder's (:mod:`memstore.embeddings.spec`): a name and its
options as a :class:`~memstore.core.model_spec.ModelSpec`, from
``MemoryStore.open(reranker="cross-encoder")``, ``MEMSTORE_RERANKER`` (with
``_MODEL``, ``_BASE_URL``...) or ``--reranker`` (with ``--reranker-model``...), all
built here.
"""

from __future__ import annotations

from typing import Any, cast

from memstore.core.model_spec import RERANKER, ModelSpec
from memstore.errors import ConfigurationError
from memstore.rerankers.base import Reranker

__all__ = [
    "RERANKER_ENV",
    "RERANKER_NAMES",
    "reranker_from_spec",
    "resolve_reranker",
    "spec_candidates",
]

# "cross-encoder": a local sentence-transformers CrossEncoder (a directory or hub name);
# "http": an endpoint speaking the rerank shape Cohere, Jina, vLLM and Infinity share.
RERANKER_NAMES = ("cross-encoder", "http")
RERANKER_ENV = RERANKER.env


def reranker_from_spec(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> Reranker:
    """The reranker ``name`` (one of :data:`RERANKER_NAMES`) with these options.

    Both need ``model``; ``http`` also ``base_url`` (its key comes from
    ``$MEMSTORE_RERANK_API_KEY``) and takes ``timeout`` and ``max_retries``. An unknown
    name or a missing option is :class:`ConfigurationError`.
    """
    kind = name.strip().lower()
    if kind not in RERANKER_NAMES:
        raise ConfigurationError(
            f"unknown reranker {name!r}; choose one of {', '.join(RERANKER_NAMES)}",
            setting="reranker",
        )
    if not model:
        raise ConfigurationError(
            f"the {kind} reranker needs a model ({RERANKER.where('model')})",
            setting="reranker",
        )
    if kind == "cross-encoder":
        if base_url is not None or timeout is not None or max_retries is not None:
            raise ConfigurationError(
                "the cross-encoder reranker runs locally and takes no base URL, timeout "
                "or max_retries",
                setting="reranker",
            )
        from memstore.rerankers.cross_encoder import CrossEncoderReranker

        return cast(Reranker, CrossEncoderReranker(model))
    if not base_url:
        raise ConfigurationError(
            f"the http reranker needs a base URL ({RERANKER.where('base_url')})",
            setting="reranker",
        )
    from memstore.rerankers.http import HTTPReranker

    limits: dict[str, Any] = {}
    if timeout is not None:
        limits["timeout"] = timeout
    if max_retries is not None:
        limits["max_retries"] = max_retries
    return cast(Reranker, HTTPReranker(model, base_url=base_url, **limits))


def spec_candidates(value: Reranker | ModelSpec | str | None) -> int | None:
    """The rows per recall a :class:`ModelSpec` (given, else ``$MEMSTORE_RERANKER``'s)
    asks the reranker to score; None when it names none."""
    if value is None:
        value = ModelSpec.from_env(RERANKER_ENV)
    return value.candidates if isinstance(value, ModelSpec) else None


def resolve_reranker(
    value: Reranker | ModelSpec | str | None, *, from_env: bool = True
) -> Reranker | None:
    """A reranker object as given; a name or :class:`ModelSpec` built; None as
    ``$MEMSTORE_RERANKER`` names it (``from_env``), else None (no reranking)."""
    if value is None:
        value = ModelSpec.from_env(RERANKER_ENV) if from_env else None
        if value is None:
            return None
    if isinstance(value, str):
        value = ModelSpec(value)
    if isinstance(value, ModelSpec):
        RERANKER.check(value)
        # ``candidates`` is the store's setting, not the model's.
        options = {o: getattr(value, o) for o in RERANKER.options if o != "candidates"}
        return reranker_from_spec(value.name, **options)
    return value
