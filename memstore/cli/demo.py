from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="run the short end-to-end demo",
        description="Remember a few turns of two users, consolidate them into facts, "
        "recall, correct a fact and travel in time, then export: on a fresh SQLite file "
        "in a new temporary directory unless --url is given.",
    )
    demo.add_argument(
        "--url", help="database URL (default: a fresh SQLite file in a new temporary directory)"
    )
    demo.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from memstore.cli.demo_story import main

    main(args.url)
    return 0
