"""dump one tenant as JSON Lines (streamed; lossless, any backend)

Write every row of one tenant (or of the anonymous bucket) as JSON Lines: a header line,
then one line per row. `memstore import` loads it into any database of either backend.
"""

from __future__ import annotations

import argparse
from typing import Any

from memstore.cli.command import add_command, add_flag, run_on_dump
from memstore.cli.user_args import add_user_argument
from memstore.core.tenancy import ANONYMOUS


def register(subparsers: Any) -> None:
    export = add_command(subparsers, "export", run, __doc__)
    who = export.add_mutually_exclusive_group(required=True)
    add_user_argument(who, help="the tenant to export")
    add_flag(who, "--anonymous", "export the anonymous bucket")
    export.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")


async def _export(args: argparse.Namespace, out: Any) -> dict[str, int]:
    from memstore.cli.jsonl import write_jsonl
    from memstore.store import MemoryStore

    # Writes no vectors, so any database's embedder will do; changes no schema.
    async with MemoryStore.open(args.url, allow_embedder_change=True, auto_migrate=False) as store:
        return await write_jsonl(store, out, user_id=ANONYMOUS if args.anonymous else args.user_id)


def run(args: argparse.Namespace) -> int:
    return run_on_dump(args.url, args.output, lambda f: _export(args, f), writing=True)
