"""A waiter survives a Postgres restart: its store reconnects the listener and loses nothing.

Runs its OWN pgserver (a private data directory), so stopping it disturbs no other test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from memstore.schema.migrate import upgrade
from tests.live_support import GUARD_S, asleep, in_other_process
from tests.pg_servers import live_postmaster_pid, pg_ctl, private_pgserver
from tests.store_parts import store_with_parts

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


class _Server:
    def __init__(self, server: Any, pids: set[int]) -> None:
        self.server, self.pids = server, pids
        url = make_url(server.get_uri()).set(drivername="postgresql+asyncpg")
        self.url = url.render_as_string(hide_password=False)

    def stop(self) -> None:
        pg_ctl(self.server, "-w", "-m", "fast", "stop")

    def start(self) -> None:
        info = self.server.get_postmaster_info()
        pg_ctl(
            self.server,
            "-w",
            "-o",
            '-h ""',
            "-o",
            f"-k {info.socket_dir}",
            "-l",
            str(self.server.log),
            "start",
        )
        pid = live_postmaster_pid(Path(self.server.pgdata))
        assert pid is not None
        self.pids.add(pid)  # stopped and checked in teardown too


@pytest.fixture(scope="module")
def own_server() -> Iterator[_Server]:
    with private_pgserver("memstore-livepg-") as (server, pids):
        own = _Server(server, pids)
        asyncio.run(upgrade(own.url))
        yield own


async def test_a_waiter_reconnects_after_a_restart_and_gets_the_next_slot(
    own_server: _Server,
) -> None:
    async with store_with_parts(own_server.url) as parts:
        store = parts.store
        await store.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id="alice")
        waiter = asyncio.create_task(
            store.threads.wait("t", after=0, user_id="alice", timeout=GUARD_S)
        )
        feed = store.changes(user_id="alice", after="")
        assert (await anext(feed)).slot_index == 0
        pending_change = asyncio.create_task(anext(feed))
        await asleep(parts.db, 2)
        await asyncio.to_thread(own_server.stop)
        await asyncio.to_thread(own_server.start)
        # Committed by another process after the restart, maybe before the listener is
        # back: the wake-everyone after reconnecting covers that gap.
        assert await in_other_process(own_server.url, "append", "alice", "t") == "1"
        slots = await waiter
        assert [(s.index, s.payload) for s in slots] == [(1, {"by": "worker"})]
        async with asyncio.timeout(GUARD_S):
            change = await pending_change
        assert (change.kind, change.slot_index) == ("thread_appended", 1)
        assert parts.db.signal.reconnects >= 1
        assert parts.db.signal.connections == 1
        await feed.aclose()
