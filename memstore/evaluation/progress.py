"""A plain progress bar on stderr: redrawn in place on a terminal, a line per quarter
otherwise (logs stay short)."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 30


class Progress:
    def __init__(self, total: int, label: str, *, stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.stream = stream
        self._tty = stream is not None and stream.isatty()
        self._quarter = 0

    def update(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total)
        if self.stream is None:
            return
        if self._tty:
            filled = _WIDTH * self.done // self.total
            bar = "#" * filled + "." * (_WIDTH - filled)
            end = "\n" if self.done == self.total else ""
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}{end}")
            self.stream.flush()
            return
        quarter = 4 * self.done // self.total
        if quarter > self._quarter:
            self._quarter = quarter
            self.stream.write(f"{self.label}: {self.done}/{self.total}\n")
            self.stream.flush()


def stderr_progress(total: int, label: str) -> Progress:
    return Progress(total, label, stream=sys.stderr)
