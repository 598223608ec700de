"""Per-call cost of the SyncMemoryStore and MCP layers over the async store (SQLite).

    python scripts/bench_sync_mcp.py [--n 200]

Times ``remember`` and ``recall``/``search_memory`` through: the async store, the
SyncMemoryStore (one thread, and 8 threads sharing it), and ``memstore mcp`` over
stdio and over streamable HTTP on 127.0.0.1 (the SDK's client). Each layer gets a
fresh SQLite file in a private temp dir. Prints median and p95 per call in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from memstore import Episode, MemoryStore, SyncMemoryStore
from memstore.schema.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]


def _report(label: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[int(len(ms) * 0.95) - 1]
    print(f"{label:<40} median {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   n={len(ms)}")


async def _timed(call: Callable[[int], Awaitable[object]], n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        out.append(time.perf_counter() - start)
    return out


def _episode(i: int) -> Episode:
    return Episode(session_id="s", user_id="alice", input=f"turn {i} about cats", output="ok")


async def bench_async(url: str, n: int) -> None:
    async with MemoryStore.open(url) as store:
        _report("async remember", await _timed(lambda i: store.remember(_episode(i)), n))
        _report("async recall", await _timed(lambda i: store.recall("cats", user_id="alice"), n))


def bench_sync(url: str, n: int) -> None:
    with SyncMemoryStore.open(url) as store:
        samples = []
        for i in range(n):
            start = time.perf_counter()
            store.remember(_episode(i))
            samples.append(time.perf_counter() - start)
        _report("sync remember (1 thread)", samples)
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            store.recall("cats", user_id="alice")
            samples.append(time.perf_counter() - start)
        _report("sync recall (1 thread)", samples)
        per_thread = max(1, n // 8)
        start = time.perf_counter()

        def work(t: int) -> None:
            for i in range(per_thread):
                store.remember(_episode(t * 10_000 + i))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        print(
            f"{'sync remember (8 threads)':<40} {8 * per_thread / elapsed:7.1f} calls/s "
            f"({8 * per_thread} calls in {elapsed:.2f} s)"
        )


async def bench_mcp(client_cm: object, label: str, n: int) -> None:
    async with client_cm as client:  # type: ignore[attr-defined]
        args = {"input": "turn about cats", "output": "ok", "session_id": "s"}
        _report(
            f"mcp {label} remember", await _timed(lambda i: client.call_tool("remember", args), n)
        )
        _report(
            f"mcp {label} search_memory",
            await _timed(lambda i: client.call_tool("search_memory", {"query": "cats"}), n),
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    n = parser.parse_args().n
    private = Path(tempfile.mkdtemp(prefix="memstore-bench-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = None
    try:
        urls = {}
        for name in ("async", "sync", "stdio", "http"):
            urls[name] = f"sqlite+aiosqlite:///{private / name}.db"
            asyncio.run(upgrade(urls[name]))
        asyncio.run(bench_async(urls["async"], n))
        bench_sync(urls["sync"], n)

        from mcp import Client, StdioServerParameters
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        params = StdioServerParameters(
            command=sys.executable,
            env={"PYTHONPATH": str(ROOT)},
            cwd=str(ROOT),
            args=["-m", "memstore", "mcp", "--url", urls["stdio"], "--user-id", "alice"],
        )
        asyncio.run(bench_mcp(Client(params), "stdio", n))

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memstore",
                "mcp",
                "--transport",
                "http",
                "--url",
                urls["http"],
                "--port",
                str(port),
                "--allow-user",
                "alice",
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)

        async def http() -> None:
            async with create_mcp_http_client(headers={"X-Memstore-User": "alice"}) as hc:
                await bench_mcp(
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=hc)),
                    "http",
                    n,
                )

        asyncio.run(http())
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=15)
        shutil.rmtree(private, ignore_errors=True)


if __name__ == "__main__":
    main()
