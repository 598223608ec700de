"""``--embedder`` / ``--model`` / ``--base-url`` / ``--dim``: the embedder of CLI commands.

The same names as ``MemoryStore.open(embedder=...)`` and ``$MEMSTORE_EMBEDDER``
(memstore.embeddings.spec); without ``--embedder`` the environment names it.
"""

from __future__ import annotations

import argparse
from typing import Any

from memstore.embeddings.base import DEFAULT_DIM, Embedder
from memstore.embeddings.spec import EMBEDDER_NAMES, ModelSpec, resolve_embedder

__all__ = [
    "add_embedder_arguments",
    "embedder_from_args",
    "spec_from_args",
    "store_embedder_from_args",
]


def add_embedder_arguments(
    parser: Any,
    *,
    default: str | None = None,
    purpose: str = "embedder of the vectors this command writes; must be the database's",
) -> None:
    """Add the options; ``default=None`` means "the store's default" (hashing, recorded width).

    ``default`` applies after ``$MEMSTORE_EMBEDDER``; ``purpose`` is the help's
    description of what the command uses the embedder for.
    """
    parser.add_argument(
        "--embedder",
        choices=EMBEDDER_NAMES,
        default=None,
        help=f"{purpose} (default: $MEMSTORE_EMBEDDER, else "
        f"{default or 'hashing at the recorded width'})",
    )
    parser.add_argument(
        "--model",
        help="sentence-transformers model directory or name (default: the bundled "
        "all-MiniLM-L6-v2), or the endpoint's model for --embedder openai "
        "(default: $MEMSTORE_EMBEDDER_MODEL)",
    )
    parser.add_argument(
        "--base-url",
        help="--embedder openai: the OpenAI-compatible endpoint (default: "
        "$MEMSTORE_EMBEDDER_BASE_URL, else $OPENAI_BASE_URL, else OpenAI's); the key is "
        "$MEMSTORE_EMBEDDER_API_KEY or $OPENAI_API_KEY",
    )
    parser.add_argument(
        "--dim",
        type=int,
        default=None,
        help=f"width of the hashing embedder (default {DEFAULT_DIM}, or the recorded width "
        "when the store builds it), or the dimensions asked of an openai endpoint",
    )
    parser.set_defaults(embedder_default=default)


def spec_from_args(args: argparse.Namespace) -> ModelSpec | None:
    """The embedder the options name, else ``$MEMSTORE_EMBEDDER``'s, else the command's
    default (None: the store's default)."""
    if args.embedder is not None:
        return ModelSpec(args.embedder, model=args.model, base_url=args.base_url, dim=args.dim)
    from_env = ModelSpec.from_env()
    if from_env is not None:
        return from_env
    default = getattr(args, "embedder_default", None)
    return None if default is None else ModelSpec(default, model=args.model, dim=args.dim)


def embedder_from_args(args: argparse.Namespace) -> Embedder | None:
    """The embedder object :func:`spec_from_args` names (hashing: ``--dim`` or 384)."""
    spec = spec_from_args(args)
    return None if spec is None else resolve_embedder(spec, recorded_dim=DEFAULT_DIM)


def store_embedder_from_args(args: argparse.Namespace) -> Embedder | ModelSpec | None:
    """For ``MemoryStore.open``: the embedder built now (a missing extra or a dead endpoint
    fails before the command starts), except a hashing one without ``--dim``, which the
    store builds at the database's recorded width."""
    spec = spec_from_args(args)
    if spec is None or (spec.name.strip().lower() == "hashing" and spec.dim is None):
        return spec
    return resolve_embedder(spec)
