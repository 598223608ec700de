from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.db.engine import create_engine
from memstore.embeddings import HashingEmbedder
from memstore.recall.reembed import ReembedResult, reembed


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reembed",
        help="embed rows that have no embedding, or switch embedder (and dimension)",
    )
    parser.add_argument("--url", help="database URL (default: $MEMSTORE_URL or ./memstore.db)")
    parser.add_argument("--embedder", choices=("hashing", "sentence-transformers"),
                        default="hashing")
    parser.add_argument("--model", help="sentence-transformers model directory or name "
                        "(default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--dim", type=int, default=384, help="width of the hashing embedder")
    parser.add_argument("--all", action="store_true", help="re-embed every row")
    parser.set_defaults(handler=run)


async def _run(args: argparse.Namespace) -> ReembedResult:
    if args.embedder == "hashing":
        embedder: Any = HashingEmbedder(args.dim)
    else:
        from memstore.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(args.model)
    engine = create_engine(args.url)
    try:
        return await reembed(engine, embedder, all_rows=args.all)
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    result = asyncio.run(_run(args))
    change = (f"dimension {result.previous_dimension} -> {result.dimension}"
              if result.previous_dimension != result.dimension
              else f"dimension {result.dimension}")
    print(f"re-embedded {result.episodes} episodes and {result.facts} facts ({change})")
    return 0
