"""PostgreSQL row-level security on every tenant table (opt-in)

Create (enable), drop (disable) or report (status) the row-level security policies that
restrict every tenant table to the memstore.user_id setting; stores must then be opened
with rls=True. PostgreSQL only. status exits 2 when some tenant table is unprotected.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.cli.command import add_command, add_flag


def register(subparsers: Any) -> None:
    rls = add_command(
        subparsers, "rls", run, __doc__, url_help="database URL (default: $MEMSTORE_URL)"
    )
    rls.add_argument(
        "action",
        choices=["enable", "disable", "status"],
        help="enable: create the policies; disable: drop them; status: list each table's state",
    )
    add_flag(rls, "--force", "with enable: apply the policy to the table owner too")


def run(args: argparse.Namespace) -> int:
    from memstore.schema.rls import disable_rls, enable_rls, rls_status

    if args.action == "enable":
        tables = asyncio.run(enable_rls(args.url, force=args.force))
        print(f"row-level security enabled on {len(tables)} tables: {', '.join(tables)}")
        return 0
    if args.action == "disable":
        tables = asyncio.run(disable_rls(args.url))
        print(f"row-level security disabled on {len(tables)} tables")
        return 0
    status = asyncio.run(rls_status(args.url))
    for entry in status:
        state = "on" if entry.enabled and entry.has_policy else "OFF"
        forced = " (forced)" if entry.forced else ""
        print(f"{entry.table}: {state}{forced}")
    # Non-zero when some tenant table is unprotected, so scripts can check it.
    return 0 if all(e.enabled and e.has_policy for e in status) else 2
