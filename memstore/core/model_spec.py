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
from pathlib import Path

from memstore.errors import ConfigurationError

__all__ = ["EMBEDDER", "RERANKER", "ModelFamily", "ModelSpec", "unloadable_model"]


@dataclass(frozen=True)
class ModelFamily:
    """A kind of model configuration names, and the spelling of its options everywhere.

    ``name`` is ``MemoryStore.open``'s argument and the command-line option
    (``--embedder``); ``env`` the environment variable (``MEMSTORE_EMBEDDER``);
    ``options`` the :class:`ModelSpec` fields the kind takes. Field ``base_url`` is then
    ``--embedder-base-url`` and ``$MEMSTORE_EMBEDDER_BASE_URL``: every command, the
    environment and the error messages spell it from here.
    """

    name: str
    env: str
    options: tuple[str, ...]

    def flag(self, option: str | None = None) -> str:
        """The command-line option of ``option`` (None: the name's own)."""
        return f"--{self.name}" + ("" if option is None else f"-{option.replace('_', '-')}")

    def variable(self, option: str | None = None) -> str:
        """The environment variable of ``option`` (None: the name's own)."""
        return self.env + ("" if option is None else f"_{option.upper()}")

    def where(self, option: str | None = None) -> str:
        """Where ``option`` is set outside Python, for messages (``--embedder-model,
        $MEMSTORE_EMBEDDER_MODEL``)."""
        return f"{self.flag(option)}, ${self.variable(option)}"


EMBEDDER = ModelFamily("embedder", "MEMSTORE_EMBEDDER", ("model", "base_url", "dim"))
RERANKER = ModelFamily("reranker", "MEMSTORE_RERANKER", ("model", "base_url"))


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


def unloadable_model(
    kind: str,
    model: str,
    *,
    setting: str,
    cache: str,
    offline: bool,
    cause: BaseException,
    hint: str = "",
) -> ConfigurationError:
    """The error for a local model (``kind``: e.g. "sentence-transformers") that did not load.

    Says where memstore looked: the directory ``model`` names, else the Hugging Face
    ``cache`` (downloads are off when ``offline``, so the library's advice to check the
    internet connection would mislead). ``hint`` names an alternative.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        reason = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        message = (
            f"{kind} model directory {str(path.resolve())!r} holds no model it can load ({reason})"
        )
    else:
        message = (
            f"{kind} model {model!r} not found: there is no directory "
            f"{str(path.resolve())!r} and the Hugging Face cache ({cache}) does not hold it"
        )
        if offline:
            message += "; memstore loads models offline (HF_HUB_OFFLINE=1) and never downloads one"
        message += (
            f". Check the name, or download it once (huggingface-cli download {model}) "
            "or name its directory"
        )
    return ConfigurationError(message + (f"; {hint}" if hint else ""), setting=setting)
