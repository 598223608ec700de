"""What every sub-command module shares: its parser with ``--url``, and ``-`` for stdio."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["URL_HELP", "add_command", "run_on_dump", "text_file"]

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


@contextmanager
def text_file(path: str, mode: str, *, encoding: str) -> Iterator[IO[str]]:
    """``path`` opened as text with ``\\n`` lines, or stdin/stdout for ``-`` (left open)."""
    if path == "-":
        yield sys.stdin if mode == "r" else sys.stdout
        return
    with open(path, mode, encoding=encoding, newline="\n") as file:
        yield file


def run_on_dump(
    url: str | None,
    path: str,
    work: Callable[[IO[str]], Coroutine[Any, Any, dict[str, int]]],
    *,
    writing: bool,
) -> int:
    """``work`` on the dump at ``path`` (``-`` for stdio) and an existing database; 0.

    A dump is written as ASCII (JSON escapes the rest) and read as UTF-8. The rows
    moved, counted by kind, go to stderr: stdout may be the dump.
    """
    from memstore.schema.database import require_existing_database  # not for --help

    require_existing_database(url)  # never create one behind a mistyped path
    mode, encoding, verb = ("w", "ascii", "exported") if writing else ("r", "utf-8", "imported")
    with text_file(path, mode, encoding=encoding) as file:
        counts = asyncio.run(work(file))
    print(f"{verb} {sum(counts.values())} rows: {counts}", file=sys.stderr)
    return 0
