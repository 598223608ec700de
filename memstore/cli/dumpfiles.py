"""The dump files of ``export -o`` and ``import -i``: ``-`` for stdio, else a checked path.

A file that cannot be read or written is one :class:`ConfigurationError` naming the path
and the cause. An export replaces its target only once the dump is complete: it is
written beside the target under a temporary name and renamed over it, so a failed
export leaves the target exactly as it was and no partial file behind.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from memstore.errors import ConfigurationError, InvalidInput

__all__ = ["dump_lines", "dump_output"]

# SQLite keeps a database's write-ahead log, shared memory and rollback journal
# beside it under these suffixes.
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _cannot(verb: str, path: str, cause: str, setting: str) -> ConfigurationError:
    return ConfigurationError(f"cannot {verb} {path!r}: {cause}", setting=setting)


@contextmanager
def dump_lines(path: str) -> Iterator[Iterable[str]]:
    """The lines of the dump at ``path`` (stdin for ``-``), read as UTF-8."""
    if path == "-":
        yield _decoded(sys.stdin, "stdin")
        return
    try:
        file = open(path, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise _cannot("read", path, exc.strerror or str(exc), "input") from exc
    with file:
        yield _decoded(file, path)


def _decoded(lines: Iterable[str], path: str) -> Iterator[str]:
    try:
        yield from lines
    except UnicodeDecodeError as exc:
        # Decoded a block at a time, so no line number is known.
        raise InvalidInput(
            f"{path} is not UTF-8 text ({exc.reason}); a dump is ASCII JSON Lines"
        ) from exc
    except OSError as exc:
        raise _cannot("read", path, exc.strerror or str(exc), "input") from exc


@contextmanager
def dump_output(path: str, *, database: Path | None = None) -> Iterator[IO[str]]:
    """A text file for the dump, ASCII with ``\\n`` lines; stdout for ``-`` (left open).

    A regular file (new or existing) is written aside and renamed over ``path`` when
    the block completes; when it raises, ``path`` is untouched and the temporary
    file removed. A device or pipe (``/dev/null``, a FIFO) is written in place.
    ``database`` (the SQLite file being dumped) and its journal files are refused.
    """
    if path == "-":
        yield sys.stdout
        return
    # Through a symlink to the file it names, as opening it would write.
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise _cannot("write", path, "it is a directory; name a file to write", "output")
    if database is not None:
        store = Path(os.path.realpath(database))
        if target == store:
            raise _cannot("write", path, "it is the database being exported", "output")
        if target in {store.with_name(store.name + suffix) for suffix in _SQLITE_SIDE_FILES}:
            raise _cannot("write", path, "it is a file of the database being exported", "output")
    if target.exists() and not target.is_file():
        with _opened(path) as file:
            yield file
        return
    if not target.parent.is_dir():
        raise _cannot("write", path, f"directory {str(target.parent)!r} does not exist", "output")
    try:
        fd, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".partial"
        )
    except OSError as exc:
        raise _cannot("write", path, exc.strerror or str(exc), "output") from exc
    try:
        os.chmod(temporary, _mode_for(target))
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException as exc:
        with suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise _cannot("write", path, exc.strerror or str(exc), "output") from exc
        raise


@contextmanager
def _opened(path: str) -> Iterator[IO[str]]:
    try:
        file = open(path, "w", encoding="ascii", newline="\n")
    except OSError as exc:
        raise _cannot("write", path, exc.strerror or str(exc), "output") from exc
    with file:
        yield file


def _mode_for(target: Path) -> int:
    # mkstemp makes the file private (0600); the dump gets the mode the file had,
    # or the one a plain open() would have given a new file.
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
