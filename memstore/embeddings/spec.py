"""One way to name an embedder: ``MemoryStore.open``, the environment and the CLI.

``MemoryStore.open(embedder="openai")`` (or a :class:`ModelSpec`), ``MEMSTORE_EMBEDDER=openai``
and ``memstore ... --embedder openai`` all end in :func:`embedder_from_spec`, so a name,
its options and its errors are the same everywhere. A reranking stage can name its models
the same way: :meth:`ModelSpec.from_env` takes the variables' prefix.
"""

from __future__ import annotations

import os
from typing import Any, cast

from memstore.core.model_spec import EMBEDDER, ModelSpec
from memstore.embeddings.base import DEFAULT_DIM, Embedder, check_dim
from memstore.errors import ConfigurationError

__all__ = [
    "EMBEDDER_NAMES",
    "ModelSpec",
    "embedder_from_spec",
    "prepare_embedder",
    "resolve_embedder",
]

# The names the three places accept. "minilm" is sentence-transformers with the
# bundled all-MiniLM-L6-v2 (what its model defaults to anyway).
EMBEDDER_NAMES = ("hashing", "sentence-transformers", "minilm", "openai")


def embedder_from_spec(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    dim: int | None = None,
    api_key: str | None = None,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    query_input_type: str | None = None,
    document_input_type: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> Embedder:
    """The embedder ``name`` (one of :data:`EMBEDDER_NAMES`) with these options.

    ``hashing``: ``dim`` (default 384). ``sentence-transformers``: ``model`` (default
    the bundled all-MiniLM-L6-v2), ``query_prefix`` / ``document_prefix`` (default its
    family's). ``openai``: ``model`` (required), ``base_url``, ``dim`` as
    ``dimensions``, the forms (``query_prefix``, ``document_prefix``,
    ``query_input_type``, ``document_input_type``), ``timeout``, ``max_retries``,
    ``api_key`` (default ``$MEMSTORE_EMBEDDER_API_KEY``, else ``$OPENAI_API_KEY``). An
    unknown name, an option the kind does not take, or a width outside 1 to 2000
    (:data:`~memstore.embeddings.base.MAX_DIM`) is :class:`ConfigurationError`.
    """
    kind = name.strip().lower()
    if kind not in EMBEDDER_NAMES:
        raise ConfigurationError(
            f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}",
            setting="embedder",
        )
    endpoint_only = {
        "base_url": base_url,
        "api_key": api_key,
        "query_input_type": query_input_type,
        "document_input_type": document_input_type,
        "timeout": timeout,
        "max_retries": max_retries,
    }
    given = [option for option, value in endpoint_only.items() if value is not None]
    if kind != "openai" and given:
        spoken = ", ".join({"base_url": "base URL", "api_key": "API key"}.get(o, o) for o in given)
        raise ConfigurationError(
            f"embedder {kind!r} takes no {spoken} (an openai endpoint's options)",
            setting="embedder",
        )
    if dim is not None:
        check_dim(dim, what=f"the embedder's width ({EMBEDDER.where('dim')})")
    if kind == "hashing":
        if model is not None or query_prefix is not None or document_prefix is not None:
            raise ConfigurationError(
                "the hashing embedder takes no model or prefixes", setting="embedder"
            )
        from memstore.embeddings.hashing import HashingEmbedder

        return cast(Embedder, HashingEmbedder(dim if dim is not None else DEFAULT_DIM))
    if kind in ("sentence-transformers", "minilm"):
        if dim is not None:
            raise ConfigurationError(
                "a sentence-transformers model has its own width (no dim)", setting="embedder"
            )
        if kind == "minilm" and model is not None:
            raise ConfigurationError(
                "'minilm' is the bundled model; name another with 'sentence-transformers'",
                setting="embedder",
            )
        from memstore.embeddings.sentence import SentenceTransformerEmbedder

        return cast(
            Embedder,
            SentenceTransformerEmbedder(
                model, query_prefix=query_prefix, document_prefix=document_prefix
            ),
        )
    if not model:
        raise ConfigurationError(
            f"the openai embedder needs a model name ({EMBEDDER.where('model')})",
            setting="embedder",
        )
    from memstore.embeddings.openai_api import OpenAIEmbedder

    key = api_key or os.environ.get(EMBEDDER.key) or None
    limits: dict[str, Any] = {}
    if timeout is not None:
        limits["timeout"] = timeout
    if max_retries is not None:
        limits["max_retries"] = max_retries
    built = OpenAIEmbedder(
        model,
        base_url=base_url,
        api_key=key,
        dimensions=dim,
        query_prefix=query_prefix or "",
        document_prefix=document_prefix or "",
        query_input_type=query_input_type or None,
        document_input_type=document_input_type or None,
        **limits,
    )
    return cast(Embedder, built)


def _built(spec: ModelSpec, recorded_dim: int | None) -> Embedder:
    EMBEDDER.check(spec)
    options = {option: getattr(spec, option) for option in EMBEDDER.options}
    if _deferred(spec):
        options["dim"] = recorded_dim  # hashing fits any width: take the database's
    return embedder_from_spec(spec.name, **options)


def _deferred(spec: ModelSpec) -> bool:
    # A hashing embedder without a width takes the database's: built once that is read.
    return spec.name.strip().lower() == "hashing" and spec.dim is None


def prepare_embedder(value: Embedder | ModelSpec | str | None) -> Embedder | ModelSpec | None:
    """What :meth:`MemoryStore.open` builds before it touches the database.

    As :func:`resolve_embedder` (``None``: ``$MEMSTORE_EMBEDDER``'s, else None), except
    that a hashing embedder without a width stays a :class:`ModelSpec`, its options
    checked, for :func:`resolve_embedder` to build at the recorded width. So a bad name,
    a missing extra or a model that is not there fails before a database file exists.
    """
    if value is None:
        value = ModelSpec.from_env()
    if isinstance(value, str):
        value = ModelSpec(value)
    if isinstance(value, ModelSpec) and _deferred(value):
        _built(value, DEFAULT_DIM)  # checks the options now; the width is the database's
        return value
    return resolve_embedder(value)


def resolve_embedder(
    value: Embedder | ModelSpec | str | None, *, recorded_dim: int | None = None
) -> Embedder | None:
    """An embedder object as given; a name or :class:`ModelSpec` built; None as
    ``$MEMSTORE_EMBEDDER`` names it, else None (the caller's default).

    A hashing embedder without a width takes ``recorded_dim`` (the database's).
    """
    if value is None:
        value = ModelSpec.from_env()
        if value is None:
            return None
    if isinstance(value, str):
        value = ModelSpec(value)
    if isinstance(value, ModelSpec):
        return _built(value, recorded_dim)
    return value
