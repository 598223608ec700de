"""The model options of every command that opens a store, defined once.

``--embedder NAME`` and ``--reranker NAME`` with one option per option of their
:class:`memstore.core.model_spec.ModelFamily` (``--embedder-model``,
``--embedder-query-input-type``, ``--reranker-candidates``...): the fields of
``ModelSpec`` and the names of ``$MEMSTORE_EMBEDDER*`` / ``$MEMSTORE_RERANKER*``,
spelled and typed from that one definition. Without ``--embedder`` the environment
names it, and an option given on the command line overrides the environment's.
``--model``, ``--base-url`` and ``--dim``, the embedder's options' earlier spellings,
still work but are not shown.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from memstore.core.model_spec import EMBEDDER, OPTIONS, RERANKER, ModelFamily
from memstore.embeddings.base import DEFAULT_DIM, MAX_DIM, Embedder
from memstore.embeddings.spec import (
    EMBEDDER_NAMES,
    ModelSpec,
    prepare_embedder,
    resolve_embedder,
)
from memstore.errors import ConfigurationError
from memstore.rerankers.spec import RERANKER_NAMES

__all__ = [
    "add_embedder_arguments",
    "add_model_arguments",
    "add_reranker_arguments",
    "embedder_from_args",
    "reranker_spec_from_args",
    "spec_from_args",
    "store_embedder_from_args",
]

_HIDDEN_SPELLINGS = {"model": "--model", "base_url": "--base-url", "dim": "--dim"}


def _dest(family: ModelFamily, option: str) -> str:
    return f"{family.name}_{option}"


def add_embedder_arguments(
    parser: Any,
    *,
    default: str | None = None,
    purpose: str = "embedder of the vectors this command writes; must be the database's",
) -> None:
    """The embedder's options; ``default=None`` means "the store's default" (hashing at
    the recorded width).

    ``default`` applies after ``$MEMSTORE_EMBEDDER``; ``purpose`` is the help's
    description of what the command uses the embedder for.
    """
    family = EMBEDDER
    parser.add_argument(
        family.flag(),
        choices=EMBEDDER_NAMES,
        default=None,
        help=f"{purpose} (default: ${family.variable()}, else "
        f"{default or 'hashing at the recorded width'})",
    )
    helps = {
        "model": "sentence-transformers model directory or hub name (default: the bundled "
        "all-MiniLM-L6-v2), or the endpoint's model for openai "
        f"(default: ${family.variable('model')})",
        "base_url": "openai: the OpenAI-compatible endpoint (default: "
        f"${family.variable('base_url')}, else $OPENAI_BASE_URL, else OpenAI's); the key "
        f"is ${family.key} or $OPENAI_API_KEY",
        "dim": f"width of the hashing embedder (1 to {MAX_DIM}; default {DEFAULT_DIM}, or the "
        "recorded width when the store builds it), or the dimensions asked of an openai "
        f"endpoint (default: ${family.variable('dim')})",
    }
    _add_options(parser, family, helps)
    for option, spelling in _HIDDEN_SPELLINGS.items():
        kind = OPTIONS[option].kind
        dest = _dest(family, option)
        parser.add_argument(spelling, dest=dest, type=kind, help=argparse.SUPPRESS)
    parser.set_defaults(embedder_default=default)


def _add_options(parser: Any, family: ModelFamily, helps: dict[str, str]) -> None:
    """One option per option of ``family``, named and typed by its definition."""
    for option in family.options:
        about = helps.get(option) or (
            f"{OPTIONS[option].about} (default: ${family.variable(option)})"
        )
        parser.add_argument(
            family.flag(option),
            dest=_dest(family, option),
            type=OPTIONS[option].kind,
            help=about,
        )


def add_reranker_arguments(parser: Any) -> None:
    """The reranker's options (default: ``$MEMSTORE_RERANKER``, else no reranking)."""
    family = RERANKER
    parser.add_argument(
        family.flag(),
        choices=RERANKER_NAMES,
        default=None,
        help="re-order the top rows of every recall with this reranker: cross-encoder (a "
        "local model) or http (a /rerank endpoint) (default: "
        f"${family.variable()}, else none)",
    )
    helps = {
        "model": "the cross-encoder's directory or hub name, or the endpoint's model "
        f"(default: ${family.variable('model')})",
        "base_url": f"http: the endpoint, /rerank is appended; its key is ${family.key} "
        f"(default: ${family.variable('base_url')})",
    }
    _add_options(parser, family, helps)


def add_model_arguments(parser: Any, *, purpose: str) -> None:
    """The embedder's and the reranker's options, for commands that recall."""
    add_embedder_arguments(parser, purpose=purpose)
    add_reranker_arguments(parser)


def _spec(args: argparse.Namespace, family: ModelFamily) -> ModelSpec | None:
    """The model the options name; else the environment's, the options given overriding
    its own; else the command's default (``{family}_default``); else None."""
    given: dict[str, Any] = {
        option: getattr(args, _dest(family, option), None) for option in family.options
    }
    given = {option: value for option, value in given.items() if value is not None}
    name = getattr(args, family.name, None)
    if name is not None:
        return ModelSpec(name, **given)
    from_env = ModelSpec.from_env(family.env)
    if from_env is not None:
        return replace(from_env, **given)
    default = getattr(args, f"{family.name}_default", None)
    if default is not None:
        return ModelSpec(default, **given)
    if given:
        options = ", ".join(family.flag(option) for option in given)
        raise ConfigurationError(
            f"{options} configure the {family.name} that {family.flag()} (or "
            f"${family.variable()}) names; name one",
            setting=family.name,
        )
    return None


def spec_from_args(args: argparse.Namespace) -> ModelSpec | None:
    """The embedder the options name, else ``$MEMSTORE_EMBEDDER``'s, else the command's
    default (None: the store's default)."""
    return _spec(args, EMBEDDER)


def reranker_spec_from_args(args: argparse.Namespace) -> ModelSpec | None:
    """The reranker the options name, else ``$MEMSTORE_RERANKER``'s, else None (none)."""
    return _spec(args, RERANKER)


def embedder_from_args(args: argparse.Namespace) -> Embedder | None:
    """The embedder object :func:`spec_from_args` names (hashing: its width or 384)."""
    spec = spec_from_args(args)
    return None if spec is None else resolve_embedder(spec, recorded_dim=DEFAULT_DIM)


def store_embedder_from_args(args: argparse.Namespace) -> Embedder | ModelSpec | None:
    """For ``MemoryStore.open``: the embedder built now (a missing extra or a model that
    is not there fails before the command starts), except a hashing one without a width,
    which the store builds at the database's recorded width."""
    return prepare_embedder(spec_from_args(args))
