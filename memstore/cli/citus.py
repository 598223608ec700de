"""print the statements that distribute the schema on a Citus cluster
(--apply runs them, --status reports the cluster's layout)

Print the statements that make the memstore schema distributed (tenant tables sharded by
user_id) on a Citus coordinator; with --apply run the ones still needed there in one
transaction; with --status report the layout. See docs/SCALING.md.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.cli.command import add_command, add_flag
from memstore.errors import InvalidInput

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "citus",
        run,
        __doc__,
        url_help="with --apply or --status: the coordinator's database URL "
        "(default: $MEMSTORE_URL)",
    )
    action = parser.add_mutually_exclusive_group()
    add_flag(
        action,
        "--apply",
        "run the statements still needed on the coordinator (one transaction; "
        "a second run changes nothing)",
    )
    add_flag(
        action,
        "--status",
        "report which memstore tables are distributed or reference tables, their "
        "colocation groups and shard counts, and the nodes (changes nothing)",
    )


def run(args: argparse.Namespace) -> int:
    from memstore.schema.cluster import apply_citus, citus_plan, citus_status

    if args.status:
        print(asyncio.run(citus_status(args.url)).render(), end="")
        return 0
    if not args.apply:
        if args.url:
            # Printing needs no database: the plan comes from the models alone.
            raise InvalidInput(
                "--url is only used with --apply or --status; without them nothing "
                "connects anywhere"
            )
        print(citus_plan().render(), end="")
        return 0
    statements = asyncio.run(apply_citus(args.url))
    if not statements:
        print("already distributed: nothing to do (every memstore table is laid out as planned)")
        return 0
    for statement in statements:
        print(f"{statement};")
    created = sum(1 for s in statements if "create_" in s)
    print(f"distributed: {created} tables, {len(statements)} statements ran on the coordinator")
    return 0
