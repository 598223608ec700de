"""Servers a test starts as subprocesses: a free port, the wait until one answers, the stop.

Each readiness check is the caller's (an HTTP endpoint, a listening socket); the wait
fails with the end of the server's log when the process exits or the time runs out, and
``stopped`` ends the process however the test ended.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["answers_http", "free_port", "listening", "stopped", "wait_until_ready"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers_http(url: str) -> Callable[[], bool]:
    """Ready once ``url`` answers 200."""

    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    return ready


def listening(port: int) -> Callable[[], bool]:
    """Ready once something accepts connections on 127.0.0.1:``port``."""

    def ready() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            return False
        return True

    return ready


def wait_until_ready(
    process: subprocess.Popen[Any],
    ready: Callable[[], bool],
    *,
    what: str,
    log: Path,
    seconds: float,
    poll: float = 0.2,
) -> None:
    end = time.monotonic() + seconds
    while not ready():
        if process.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"{what} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(poll)


@contextmanager
def stopped(process: subprocess.Popen[Any]) -> Iterator[subprocess.Popen[Any]]:
    """``process`` for the block, then terminated (killed if it lingers), also on failure."""
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
