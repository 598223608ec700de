"""``--embedder`` / ``--model`` / ``--dim``: the embedder of CLI commands that embed text."""

from __future__ import annotations

import argparse
from typing import Any

from memstore.embeddings.base import DEFAULT_DIM, Embedder

__all__ = ["add_embedder_arguments", "embedder_from_args"]


def add_embedder_arguments(
    parser: Any,
    *,
    default: str | None = None,
    purpose: str = "embedder of the vectors this command writes; must be the database's",
) -> None:
    """Add the options; ``default=None`` means "the store's default" (hashing, recorded width).

    ``purpose`` is the help's description of what the command uses the embedder for.
    """
    parser.add_argument(
        "--embedder",
        choices=("hashing", "sentence-transformers"),
        default=default,
        help=f"{purpose} (default: {default or 'hashing at the recorded width'})",
    )
    parser.add_argument(
        "--model",
        help="sentence-transformers model directory or name "
        "(default: the bundled all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--dim",
        type=int,
        default=None,
        help=f"width of the hashing embedder (default {DEFAULT_DIM}, or the "
        "recorded width when --embedder is not given)",
    )


def embedder_from_args(args: argparse.Namespace) -> Embedder | None:
    """The embedder the options name; None for the store's default."""
    if args.embedder is None:
        return None
    if args.embedder == "hashing":
        from memstore.embeddings.hashing import HashingEmbedder

        return HashingEmbedder(args.dim if args.dim is not None else DEFAULT_DIM)
    from memstore.embeddings.sentence import SentenceTransformerEmbedder

    embedder: Embedder = SentenceTransformerEmbedder(args.model)
    return embedder
