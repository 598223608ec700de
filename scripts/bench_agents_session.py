"""Latency of the OpenAI Agents session as its log grows (SQLite, private temp dir).

get_items replays the whole log, so its cost grows with the number of
add_items/pop_item calls; this measures by how much.

    python scripts/bench_agents_session.py
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import MemoryStore
from memstore.integrations.openai_agents import MemstoreSession


async def main() -> None:
    root = tempfile.mkdtemp(prefix="memstore-bench-session-")
    try:
        url = f"sqlite+aiosqlite:///{root}/session.db"
        async with MemoryStore.open(url, auto_migrate=True) as store:
            session = MemstoreSession("bench", store, user_id="u")
            for calls in (100, 1000):
                while len(await session.get_items()) < 2 * calls:
                    await session.add_items(
                        [
                            {"role": "user", "content": "question " * 20},
                            {"role": "assistant", "content": "answer " * 50},
                        ]
                    )
                laps = []
                for _ in range(10):
                    start = time.perf_counter()
                    await session.get_items(limit=20)
                    laps.append(time.perf_counter() - start)
                start = time.perf_counter()
                await session.add_items([{"role": "user", "content": "x"}])
                add = time.perf_counter() - start
                start = time.perf_counter()
                await session.pop_item()
                pop = time.perf_counter() - start
                print(
                    f"sqlite log={calls} calls: get_items(limit=20) median "
                    f"{statistics.median(laps) * 1000:.1f} ms, add_items {add * 1000:.1f} ms, "
                    f"pop_item {pop * 1000:.1f} ms",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
