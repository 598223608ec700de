"""Linux inotify through ctypes: has any file of one SQLite database been written?

A commit in WAL mode appends to the ``-wal`` file; a checkpoint writes the main
file; in a rollback-journal mode a commit writes the main file and creates and
deletes (or rewrites) the ``-journal``. :class:`DatabaseFiles` watches the main
file and the ``-wal`` for writes, and their directory for those files appearing,
disappearing or being renamed (a ``-wal`` created after the watch started gets a
watch of its own). An event says only "something was written": whether a commit
became visible is for ``PRAGMA data_version`` to say (memstore/backends/sqlite/signal.py).

Standard library only: ``inotify_init1`` and ``inotify_add_watch`` from the C
library the interpreter is linked with, ``os.read`` and ``os.close`` on the
descriptor. Anything missing or refused (not Linux, the instance or watch limit)
is an :class:`OSError` from the constructor.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from typing import Any

__all__ = ["DatabaseFiles"]

_IN_MODIFY = 0x2
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC

_FILE_MASK = _IN_MODIFY | _IN_DELETE_SELF | _IN_MOVE_SELF
_DIR_MASK = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_ONLYDIR
_APPEARED = _IN_CREATE | _IN_MOVED_TO

_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (name follows)
_READ_SIZE = 64 * 1024

_libc: Any = None


def _c_library() -> Any:
    global _libc
    if _libc is None:
        if not sys.platform.startswith("linux"):
            raise OSError(errno.ENOSYS, f"inotify is Linux's ({sys.platform} has none)")
        # The interpreter's own symbol table includes the C library it links.
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except AttributeError as exc:
            raise OSError(errno.ENOSYS, "the C library has no inotify functions") from exc
        init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
        add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        add.restype = ctypes.c_int
        _libc = libc
    return _libc


def _failed(call: str, path: str = "") -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{call}: {os.strerror(code)}", *([path] if path else []))


class DatabaseFiles:
    """One inotify instance watching the files of the database at ``path``."""

    def __init__(self, path: str) -> None:
        libc = _c_library()
        fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        if fd < 0:
            raise _failed("inotify_init1")
        self._fd: int | None = fd
        directory, main = os.path.split(path)
        self._directory = directory or "."
        # The files whose writes are watched, and those whose names in the
        # directory's events are news of the database.
        self._watched = (main, f"{main}-wal")
        self._names = frozenset((*self._watched, f"{main}-journal"))
        self._file_of: dict[int, str] = {}  # watch descriptor -> file name
        try:
            # The directory first: a file created from now on is reported.
            self._directory_wd = self._add(self._directory, _DIR_MASK)
            for name in self._watched:
                self._watch(name)
        except BaseException:
            self.close()
            raise

    @property
    def watches(self) -> int:
        """Watched files now (the directory not counted)."""
        return len(self._file_of)

    def fileno(self) -> int:
        if self._fd is None:
            raise OSError(errno.EBADF, "the inotify instance is closed")
        return self._fd

    def read(self) -> bool:
        """Drain the queued events (never blocks); whether any was news of the database.

        A watch the kernel could not add (the limit reached) raises :class:`OSError`.
        """
        news = False
        while True:
            try:
                data = os.read(self.fileno(), _READ_SIZE)
            except BlockingIOError:
                return news
            if not data:
                return news
            for wd, mask, name in _events(data):
                news |= self._on_event(wd, mask, name)

    def _on_event(self, wd: int, mask: int, name: str) -> bool:
        if mask & _IN_Q_OVERFLOW:
            return True  # events were dropped: any of them may have been a commit
        if wd == self._directory_wd:
            if name not in self._names:
                return False
            if mask & _APPEARED and name in self._watched:
                self._watch(name)  # a new file (inode) under a watched name
            return True
        if mask & _IN_IGNORED:
            self._file_of.pop(wd, None)  # the file is gone; its name may come back
            return False
        return wd in self._file_of

    def _watch(self, name: str) -> None:
        try:
            wd = self._add(os.path.join(self._directory, name), _FILE_MASK)
        except FileNotFoundError:
            return  # not there (yet): the directory's watch says when it is
        self._file_of[wd] = name

    def _add(self, path: str, mask: int) -> int:
        wd = int(_c_library().inotify_add_watch(self.fileno(), os.fsencode(path), mask))
        if wd < 0:
            raise _failed("inotify_add_watch", path)
        return wd

    def close(self) -> None:
        """Close the descriptor (its watches go with it); idempotent."""
        fd, self._fd = self._fd, None
        self._file_of.clear()
        if fd is not None:
            os.close(fd)


def _events(data: bytes) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    offset = 0
    while offset + _HEADER.size <= len(data):
        wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
        start = offset + _HEADER.size
        raw = data[start : start + length].split(b"\0", 1)[0]
        out.append((wd, mask, os.fsdecode(raw)))
        offset = start + length
    return out
