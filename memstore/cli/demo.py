"""run the short end-to-end demo

Remember a few turns of two users, consolidate them into facts, recall, correct a fact
and travel in time, then export: on a fresh SQLite file in a new temporary directory
unless --url is given.
"""

from __future__ import annotations

import argparse
from typing import Any

from memstore.cli.command import add_command


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "demo",
        run,
        __doc__,
        url_help="database URL (default: a fresh SQLite file in a new temporary directory)",
    )


def run(args: argparse.Namespace) -> int:
    from memstore.cli.demo_story import main

    main(args.url)
    return 0
