"""Helpers of the live-memory tests: a writer in another OS process, and waiting for sleepers."""

from __future__ import annotations

import asyncio
import sys

from memstore import MemoryStore

__all__ = ["GUARD_S", "asleep", "in_other_process"]

# Failure guards only: a test that behaves never comes near them.
GUARD_S = 60.0

# One write by a separate process with its own store (own engine, own connections).
WORKER = r"""
import asyncio, sys
from memstore import MemoryStore

url, action, user, key = sys.argv[1:5]

class Rollback(Exception):
    pass

async def main():
    async with MemoryStore.open(url) as store:
        if action == "append":
            slot = await store.threads.append(key, {"by": "worker"}, from_id="a", to_id="b",
                                              user_id=user)
            print(slot.index)
        elif action == "block":
            await store.update_block(key, "from the worker", user_id=user)
        elif action == "rollback":
            from sqlalchemy.ext.asyncio import AsyncSession
            try:
                async with AsyncSession(store.engine) as session, session.begin():
                    await store.bind(session).threads.append(
                        key, {"by": "worker"}, from_id="a", to_id="b", user_id=user
                    )
                    raise Rollback  # the append, its change row and its NOTIFY roll back
            except Rollback:
                print("rolled back")
        else:
            raise SystemExit(f"unknown action {action}")

asyncio.run(main())
"""


async def in_other_process(url: str, action: str, user: str, key: str) -> str:
    """Run one write in a fresh Python process against ``url``; its stdout."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WORKER,
        url,
        action,
        user,
        key,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(GUARD_S):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


async def asleep(store: MemoryStore, waiters: int = 1) -> None:
    """Until ``waiters`` waiting calls of ``store`` have read and gone to sleep."""
    async with asyncio.timeout(GUARD_S):
        # Polls a counter the waiters keep; an Event for the test alone would be noise.
        while store.db.signal.sleeping < waiters:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
