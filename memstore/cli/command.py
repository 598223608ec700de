"""What every sub-command module shares: its parser with ``--url``, and ``-`` for stdio."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

__all__ = ["URL_HELP", "add_command", "add_flag", "run_on_dump"]

URL_HELP = "database URL (default: $MEMSTORE_URL or ./memstore.db)"


def add_command(
    subparsers: Any,
    name: str,
    run: Callable[[argparse.Namespace], int],
    doc: str | None,
    *,
    url_help: str | None = URL_HELP,
    extras: Sequence[str] = (),
) -> argparse.ArgumentParser:
    """The sub-command's parser, running ``run``; with ``--url`` unless ``url_help`` is None.

    ``doc`` is the command module's docstring: its first paragraph is the short
    help, the paragraphs after it the description. ``extras`` names the optional extras
    the command needs (see :mod:`memstore.cli`).
    """
    help, _, description = (doc or "").strip().partition("\n\n")
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=" ".join(help.split()), description=" ".join(description.split())
    )
    if url_help is not None:
        parser.add_argument("--url", help=url_help)
    parser.set_defaults(handler=run, extras=tuple(extras))
    return parser


def add_flag(parser: argparse._ActionsContainer, name: str, help: str) -> None:
    """An on/off option: absent is False."""
    parser.add_argument(name, action="store_true", help=help)


def run_on_dump(
    url: str | None,
    path: str,
    work: Callable[[Any], Coroutine[Any, Any, dict[str, int]]],
    *,
    writing: bool,
) -> int:
    """``work`` on the dump at ``path`` (``-`` for stdio) and an existing database; 0.

    Writing, ``work`` gets a text file (:func:`memstore.cli.dumpfiles.dump_output`:
    the target is replaced only when ``work`` succeeds); reading, the dump's lines.
    The rows moved, counted by kind, go to stderr: stdout may be the dump.
    """
    from memstore.cli.dumpfiles import dump_lines, dump_output
    from memstore.schema.database import require_existing_database, sqlite_file

    require_existing_database(url)  # never create one behind a mistyped path
    if writing:
        with dump_output(path, database=sqlite_file(url)) as out:
            counts = asyncio.run(work(out))
    else:
        with dump_lines(path) as lines:
            counts = asyncio.run(work(lines))
    verb = "exported" if writing else "imported"
    print(f"{verb} {sum(counts.values())} rows: {counts}", file=sys.stderr)
    return 0
