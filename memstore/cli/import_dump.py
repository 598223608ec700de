"""load a `memstore export` JSON Lines dump into an empty tenant

Load a `memstore export` dump into a tenant that holds nothing yet, in one transaction:
every row is checked first, and a bad row writes nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from memstore.cli.command import add_command, add_flag, run_on_dump
from memstore.cli.embedder_args import add_embedder_arguments, store_embedder_from_args
from memstore.cli.user_args import add_user_argument
from memstore.core.tenancy import ANONYMOUS


def register(subparsers: Any) -> None:
    imp = add_command(subparsers, "import", run, __doc__)
    who = imp.add_mutually_exclusive_group()
    add_user_argument(who, help="import as this tenant (default: the dump's)")
    add_flag(who, "--anonymous", "import into the anonymous bucket")
    imp.add_argument("-i", "--input", default="-", help="file to read (default: stdin)")
    # Rows without an embedding (or embedded by another embedder) are embedded.
    add_embedder_arguments(imp)


async def _import(args: argparse.Namespace, lines: Any) -> dict[str, int]:
    from memstore.cli.jsonl import read_jsonl
    from memstore.store import FROM_DUMP, MemoryStore

    user: Any = FROM_DUMP
    if args.anonymous:
        user = ANONYMOUS
    elif args.user_id is not None:
        user = args.user_id
    async with MemoryStore.open(
        args.url, embedder=store_embedder_from_args(args), auto_migrate=False
    ) as store:
        return await read_jsonl(store, lines, user_id=user)


def run(args: argparse.Namespace) -> int:
    return run_on_dump(args.url, args.input, lambda f: _import(args, f), writing=False)
