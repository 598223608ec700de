"""delete idle / surplus threads and expired working-memory keys

Thread garbage collection (idle TTL, then all but the newest --max-threads threads per
tenant) and the working-memory TTL sweep. Every tenant unless --user-id or --anonymous
is given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from memstore.cli.command import add_command, add_flag
from memstore.cli.user_args import add_user_argument
from memstore.core.tenancy import ANONYMOUS
from memstore.schema.database import require_existing_database
from memstore.types import GcReport


def register(subparsers: Any) -> None:
    gc = add_command(subparsers, "gc", run, __doc__)
    who = gc.add_mutually_exclusive_group()
    add_user_argument(who, help="collect only this tenant")
    add_flag(who, "--anonymous", "collect only the anonymous tenant (memstore.ANONYMOUS)")
    gc.add_argument(
        "--max-threads",
        type=int,
        default=None,
        help="threads kept per tenant, newest first (default: 1000)",
    )
    gc.add_argument(
        "--idle-ttl-seconds",
        type=float,
        default=None,
        help="delete threads with no append for this long (default: never)",
    )
    add_flag(gc, "--json", "print the report as JSON")


async def _gc(args: argparse.Namespace) -> GcReport:
    from memstore.store import MemoryStore

    # Writes no vectors, so any database's embedder will do; changes no schema.
    async with MemoryStore.open(args.url, allow_embedder_change=True, auto_migrate=False) as store:
        limits = {"max_threads": args.max_threads, "thread_idle_ttl_seconds": args.idle_ttl_seconds}
        if args.anonymous:
            return await store.gc(user_id=ANONYMOUS, **limits)
        if args.user_id is not None:
            return await store.gc(user_id=args.user_id, **limits)
        return await store.gc_all_tenants(**limits)


def run(args: argparse.Namespace) -> int:
    require_existing_database(args.url)  # never create one behind a mistyped path
    report = asyncio.run(_gc(args))
    if args.json:
        print(
            json.dumps(
                {
                    "threads": [
                        {
                            "user_id": t.user_id,
                            "thread_id": t.thread_id,
                            "slot_count": t.slot_count,
                            "reason": t.reason,
                        }
                        for t in report.threads
                    ],
                    "slots": report.slots,
                    "expired_keys": report.expired_keys,
                }
            )
        )
        return 0
    for t in report.threads:
        print(
            f"removed thread {t.thread_id!r} of user {t.user_id!r}: "
            f"{t.slot_count} slots ({t.reason})"
        )
    print(
        f"gc: removed {len(report.threads)} threads ({report.slots} slots) "
        f"and {report.expired_keys} expired working-memory keys"
    )
    return 0
