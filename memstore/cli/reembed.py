"""embed rows that have no embedding, or switch embedder (and dimension)

Embed the rows stored without a vector with --embedder, or every row with --all. A
different width or embedder than the recorded one re-embeds every row and records the
new one. Stores opened before should be reopened.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.cli.command import add_command, add_flag
from memstore.cli.embedder_args import add_embedder_arguments, embedder_from_args
from memstore.schema.database import reembed_database


def register(subparsers: Any) -> None:
    parser = add_command(subparsers, "reembed", run, __doc__)
    add_embedder_arguments(
        parser,
        default="hashing",
        purpose="embedder to (re-)embed the rows with; it becomes the database's",
    )
    add_flag(parser, "--all", "re-embed every row")
    add_flag(
        parser,
        "--passages",
        "also compute passages for episodes stored without them, keeping their vectors",
    )
    add_flag(
        parser,
        "--drop-forms",
        "switch to an embedder without the query and document forms the database's "
        "embedder has (refused otherwise: stores opened with the forms would be locked out)",
    )


def run(args: argparse.Namespace) -> int:
    embedder = embedder_from_args(args)
    assert embedder is not None  # --embedder has a default here
    result = asyncio.run(
        reembed_database(
            args.url,
            embedder,
            all_rows=args.all,
            passages=args.passages,
            drop_forms=args.drop_forms,
        )
    )
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
