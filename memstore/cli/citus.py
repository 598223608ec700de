"""``memstore citus``: print (or, with ``--apply``, run) the Citus distribution statements."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.errors import InvalidInput

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "citus",
        help="print the statements that distribute the schema on a Citus cluster "
        "(--apply runs them)",
        description="Print the statements that make the memstore schema distributed "
        "(tenant tables sharded by user_id) on a Citus coordinator; with --apply run them "
        "there in one transaction. See docs/SCALING.md.",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="run the statements on the coordinator (one transaction)",
    )
    parser.add_argument(
        "--url", help="with --apply: the coordinator's database URL (default: $MEMSTORE_URL)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from memstore.citus import apply_citus, citus_plan

    if not args.apply:
        if args.url:
            # Printing needs no database: the plan comes from the models alone.
            raise InvalidInput(
                "--url is only used with --apply; without it nothing connects anywhere"
            )
        print(citus_plan().render(), end="")
        return 0
    statements = asyncio.run(apply_citus(args.url))
    for statement in statements:
        print(f"{statement};")
    print(f"distributed: {len(statements)} statements ran on the coordinator")
    return 0
