from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.cli.embedder_args import add_embedder_arguments, embedder_from_args
from memstore.db.engine import create_engine, require_existing_database
from memstore.schema.migrate import check_schema
from memstore.search.reembed import ReembedResult, reembed


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reembed",
        help="embed rows that have no embedding, or switch embedder (and dimension)",
        description="Embed the rows stored without a vector with --embedder, or every "
        "row with --all. A different width or embedder than the recorded one re-embeds "
        "every row and records the new one. Stores opened before should be reopened.",
    )
    parser.add_argument("--url", help="database URL (default: $MEMSTORE_URL or ./memstore.db)")
    add_embedder_arguments(
        parser,
        default="hashing",
        purpose="embedder to (re-)embed the rows with; it becomes the database's",
    )
    parser.add_argument("--all", action="store_true", help="re-embed every row")
    parser.add_argument(
        "--passages",
        action="store_true",
        help="also compute passages for episodes stored without them, keeping their vectors",
    )
    parser.set_defaults(handler=run)


async def _run(args: argparse.Namespace) -> ReembedResult:
    embedder = embedder_from_args(args)
    assert embedder is not None  # --embedder has a default here
    engine = create_engine(args.url)
    try:
        # Without this, a database with no schema fails inside reembed's first
        # statement ("no such table") instead of naming the fix.
        await check_schema(engine)
        return await reembed(engine, embedder, all_rows=args.all, passages=args.passages)
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    require_existing_database(args.url)  # never create one behind a mistyped path
    result = asyncio.run(_run(args))
    change = (
        f"dimension {result.previous_dimension} -> {result.dimension}"
        if result.previous_dimension != result.dimension
        else f"dimension {result.dimension}"
    )
    if result.previous_embedder not in (None, result.embedder):
        change += f", embedder {result.previous_embedder} -> {result.embedder}"
    else:
        change += f", embedder {result.embedder}"
    filled = f"; passages for {result.passages} episodes" if args.passages else ""
    print(
        f"re-embedded {result.episodes} episodes, {result.facts} facts and "
        f"{result.langgraph_items} LangGraph store items ({change}){filled}"
    )
    return 0
