"""Helpers of the live-memory tests: a writer in another OS process, and waiting for sleepers."""

from __future__ import annotations

import asyncio
import sys
import uuid

from memstore.core.tenancy import TenantId
from memstore.db.unit import Database
from memstore.repositories.changes import ChangeLogRepository
from tests.store_parts import StoreParts

__all__ = ["GUARD_S", "asleep", "in_other_process", "settled"]

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
            from memstore.db.engine import create_engine
            engine = create_engine(url)  # the application's own engine
            try:
                async with AsyncSession(engine) as session, session.begin():
                    await store.bind(session).threads.append(
                        key, {"by": "worker"}, from_id="a", to_id="b", user_id=user
                    )
                    raise Rollback  # the append, its change row and its NOTIFY roll back
            except Rollback:
                print("rolled back")
            finally:
                await engine.dispose()
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


async def asleep(db: Database, waiters: int = 1) -> None:
    """Until ``waiters`` waiting calls on ``db`` (a store's, tests/store_parts.py) have
    read and gone to sleep."""
    async with asyncio.timeout(GUARD_S):
        # Polls a counter the waiters keep; an Event for the test alone would be noise.
        while db.signal.sleeping < waiters:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def settled(parts: StoreParts) -> int:
    """Until every hint of a commit made before this call has reached the store's waiters.

    Postgres delivers notifications in commit order: once the listener has received
    the hint of a fresh tenant's commit made now, it has dispatched all earlier ones.
    SQLite: two polls of data_version after now. Returns the wake-ups the sentinel
    commit caused (none unless a waiter's tenant has no change log yet).
    """
    store, signal = parts.store, parts.db.signal
    if store.backend == "sqlite":
        polls = signal.polls
        async with asyncio.timeout(GUARD_S):
            while signal.polls < polls + 2:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        return 0
    woken = signal.wakeups
    sentinel = f"zz-sentinel-{uuid.uuid4().hex}"
    await store.update_block("sentinel", "x", user_id=sentinel)
    async with parts.db.read(sentinel) as session:
        head = await ChangeLogRepository(session=session).head(TenantId(sentinel))
    assert head is not None
    async with asyncio.timeout(GUARD_S):
        while head.hint not in signal.recent:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    return signal.wakeups - woken
