"""serve a local, read-only web page showing what a tenant's memory holds

Facts on a bi-temporal timeline, episodes by session with search, blocks with their
history, threads, working memory and access counts. Never writes. Needs the inspect
extra: pip install 'memstore[inspect]'.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from memstore.cli.command import add_command
from memstore.cli.embedder_args import (
    add_model_arguments,
    reranker_spec_from_args,
    store_embedder_from_args,
)
from memstore.schema.database import require_existing_database


def register(subparsers: Any) -> None:
    inspect = add_command(subparsers, "inspect", run, __doc__, extras=("inspect",))
    inspect.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; others need a token)",
    )
    inspect.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    inspect.add_argument(
        "--token", default=None, help="required on every request (default: $MEMSTORE_INSPECT_TOKEN)"
    )
    inspect.add_argument(
        "--max-rows",
        type=int,
        default=2000,
        help="rows per table a page shows, newest first (default 2000)",
    )
    add_model_arguments(
        inspect,
        purpose="embedder of the search box's queries, compared with the stored vectors; "
        "must be the database's (inspect never writes)",
    )


def run(args: argparse.Namespace) -> int:
    from memstore.inspect.server import Inspector

    token = args.token or os.environ.get("MEMSTORE_INSPECT_TOKEN") or None

    inspector = Inspector(
        args.url,
        host=args.host,
        port=args.port,
        token=token,
        embedder=store_embedder_from_args(args),
        reranker=reranker_spec_from_args(args),
        max_rows=args.max_rows,
    )
    # The page opens an existing store only, and says so in one line.
    require_existing_database(args.url)

    def ready() -> None:
        # Once the store is open: a database that cannot be opened is one line, not
        # an announcement followed by the error.
        print(
            f"memstore inspect: serving http://{args.host}:{args.port}/ (Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )

    inspector.run(on_ready=ready)
    return 0
