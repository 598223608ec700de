"""Helpers of scripts/bench_live.py: what idle waiters cost, SQLite's forced poll, Redis."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["RedisServer", "force_poll", "idle_cost", "redis_unavailable"]

USER = "bench"


def force_poll() -> None:
    """SQLite: refuse inotify in this process, so waiters poll data_version every 30 ms."""
    from memstore.backends.sqlite import signal

    setattr(signal, "_file_events", lambda path: None)  # noqa: B010 (a private chooser)


# ---- what idle waiters cost ------------------------------------------------------------


async def _cpu_share(seconds: float) -> float:
    """This process's CPU time over the next ``seconds`` (while the loop idles), per second."""
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    return (time.process_time() - cpu) / (time.monotonic() - wall)


async def _idle_cost(url: str, waiters: int, seconds: float) -> tuple[float, float]:
    from memstore import MemoryStore

    async with MemoryStore.open(url) as store:
        # Connections open and the watcher started, so neither is counted below.
        await store.threads.wait("idle", timeout=0, user_id=USER)
        alone = await _cpu_share(seconds)
        tasks = [
            asyncio.create_task(
                store.threads.wait(f"idle-{i}", user_id=USER, timeout=seconds * 3 + 60)
            )
            for i in range(waiters)
        ]
        await asyncio.sleep(1.0)  # asleep, the watcher's first reads done
        waiting = await _cpu_share(seconds)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return alone, waiting


def _idle_child(url: str, waiters: int, seconds: float, poll: bool, out: Any) -> None:
    if poll:
        force_poll()
    out.put(asyncio.run(_idle_cost(url, waiters, seconds)))


def idle_cost(url: str, waiters: int, seconds: float, *, poll: bool) -> tuple[float, float]:
    """CPU share of a process with a store: no waiter, then ``waiters`` idle waiters
    (``poll``: SQLite with inotify refused)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_idle_child, args=(url, waiters, seconds, poll, out))
    child.start()
    try:
        result: tuple[float, float] = out.get(timeout=seconds * 4 + 120)
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    return result


# ---- Redis -----------------------------------------------------------------------------


class RedisServer:
    """A private redis-server on a Unix socket in ``root``; stopped by :meth:`stop`."""

    def __init__(self, root: Path) -> None:
        self.socket = str(root / "redis.sock")
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                "0",
                "--unixsocket",
                self.socket,
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(root),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)


def redis_unavailable() -> str | None:
    if shutil.which("redis-server") is None:
        return "no redis-server on PATH (apt-get install redis-server)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis client is not installed (pip install -e '.[bench]')"
    return None
