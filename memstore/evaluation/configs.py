"""Model configurations to compare: an embedder (with its query/document forms), a
reranker and its candidates, named on the command line or in a JSON file.

A spec is comma-separated ``key=value`` pairs, the first item may be the embedder's name
alone: ``hashing``, ``minilm,reranker=cross-encoder,reranker_model=DIR,candidates=30``,
``openai,model=e5,base_url=http://127.0.0.1:8000/v1,query_form=query,document_form=passage``.
Keys: ``embedder``, ``model``, ``base_url``, ``dim``, ``query_form``, ``document_form``,
``reranker``, ``reranker_model``, ``reranker_base_url``, ``candidates``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memstore.core.model_spec import ModelSpec
from memstore.embeddings.base import Embedder
from memstore.embeddings.spec import embedder_from_spec
from memstore.errors import ConfigurationError

__all__ = ["EvalConfig", "load_configs", "parse_config"]

_INTS = {"dim", "candidates"}


@dataclass(frozen=True)
class EvalConfig:
    """One configuration of the store: what ``MemoryStore.open`` is given."""

    name: str
    embedder: str = "hashing"
    model: str | None = None
    base_url: str | None = None
    dim: int | None = None
    query_form: str | None = None
    document_form: str | None = None
    reranker: str | None = None
    reranker_model: str | None = None
    reranker_base_url: str | None = None
    candidates: int | None = None

    def build_embedder(self) -> Embedder:
        """The embedder, built through the store's own spec (forms: the endpoint's
        ``input_type`` of queries and of stored text, for ``openai``)."""
        try:
            return embedder_from_spec(
                self.embedder,
                model=self.model,
                base_url=self.base_url,
                dim=self.dim,
                query_input_type=self.query_form,
                document_input_type=self.document_form,
            )
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"configuration {self.name!r}: {exc}", setting="config"
            ) from exc

    def reranker_spec(self) -> ModelSpec | None:
        if self.reranker is None:
            return None
        return ModelSpec(self.reranker, model=self.reranker_model, base_url=self.reranker_base_url)

    def describe(self) -> dict[str, Any]:
        """The settings given (no key: keys come from the environment only)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}


def _config(name: str, pairs: dict[str, Any]) -> EvalConfig:
    known = {f.name for f in fields(EvalConfig)} - {"name"}
    values: dict[str, Any] = {}
    for key, value in pairs.items():
        if key not in known:
            raise ConfigurationError(
                f"configuration {name!r}: unknown key {key!r}; keys: {', '.join(sorted(known))}",
                setting="config",
            )
        if key in _INTS and not isinstance(value, int):
            try:
                value = int(str(value))
            except ValueError:
                raise ConfigurationError(
                    f"configuration {name!r}: {key} must be an integer, got {value!r}",
                    setting="config",
                ) from None
        if key in _INTS and value < 1:
            raise ConfigurationError(
                f"configuration {name!r}: {key} must be positive", setting="config"
            )
        values[key] = value if key in _INTS else str(value)
    return EvalConfig(name=name, **values)


def parse_config(text: str) -> EvalConfig:
    """``NAME=SPEC`` (see the module), or a bare SPEC named after its embedder."""
    name, sep, spec = text.partition("=")
    head = spec.split(",", 1)[0]
    if not sep or "=" in name or (head and "=" not in head and "," in name):
        name, spec = "", text
    pairs: dict[str, str] = {}
    for i, item in enumerate(p.strip() for p in spec.split(",")):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq:
            if i:
                raise ConfigurationError(
                    f"configuration {text!r}: {item!r} is not key=value", setting="config"
                )
            key, value = "embedder", item
        pairs[key.strip()] = value.strip()
    if not name:
        name = pairs.get("embedder", "hashing")
    return _config(name.strip(), pairs)


def load_configs(path: str | Path) -> list[EvalConfig]:
    """A JSON file ``{"name": {"embedder": ..., ...}, ...}``, in its order."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigurationError(
            f"configurations file {path}: {type(error).__name__}: {error}", setting="config"
        ) from error
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigurationError(
            f"configurations file {path}: expected an object of name -> settings",
            setting="config",
        )
    return [_config(str(name), pairs) for name, pairs in data.items()]
