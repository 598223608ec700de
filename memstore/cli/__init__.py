"""``memstore`` command line: thin wrappers over library calls.

Each sub-command lives in its own module exposing ``register(subparsers)``;
handlers return an exit code. Errors print their cause and exit non-zero.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from memstore.errors import MemstoreError

__all__ = ["main"]

COMMAND_MODULES = [
    "memstore.cli.migrate",
    "memstore.cli.demo",
    "memstore.cli.gc",
    "memstore.cli.consolidate",
    "memstore.cli.rls",
    "memstore.cli.export",
    "memstore.cli.import_dump",
    "memstore.cli.reembed",
    "memstore.cli.mcp",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memstore", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except MemstoreError as error:
        print(f"memstore {args.command}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
