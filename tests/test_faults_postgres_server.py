"""The Postgres server stops (pg_ctl stop -m fast) or freezes under a stream of calls.

This test runs its OWN pgserver instance (a separate data directory), so stopping
it disturbs no other test.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from memstore import Conflict, Episode, Fact, MemoryStore, Unavailable
from memstore.schema.migrate import upgrade
from tests.pg_servers import live_postmaster_pid, pg_ctl, private_pgserver

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
# Guards against a hang turning into a stuck CI job; never reached when calls behave.
HANG_GUARD_S = 120


@dataclass
class OwnServer:
    server: Any
    url: str
    # Every postmaster this module started: all must be gone after teardown.
    pids: set[int]

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
        self.pids.add(pid)

    def processes(self) -> list[Any]:
        import psutil

        pid = live_postmaster_pid(Path(self.server.pgdata))
        assert pid is not None
        postmaster = psutil.Process(pid)
        return [postmaster, *postmaster.children(recursive=True)]


@pytest.fixture(scope="module")
def own_server() -> Iterator[OwnServer]:
    # A private directory (never pytest's shared temp root), stopped and checked
    # to leave no process behind even when a test fails (tests/pg_servers.py).
    with private_pgserver("memstore-faultpg-") as (server, pids):
        url = make_url(server.get_uri()).set(drivername="postgresql+asyncpg")
        own = OwnServer(server, url.render_as_string(hide_password=False), pids)
        asyncio.run(upgrade(own.url))
        yield own


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(HANG_GUARD_S):
        # Polls counters the other tasks bump; an Event per counter would be noise.
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


def every_call(store: MemoryStore) -> list[Callable[[], Awaitable[Any]]]:
    alice = {"user_id": "alice"}
    return [
        lambda: store.remember(Episode(session_id="down", input="x", **alice)),
        lambda: store.remember_many([Episode(session_id="down", input="y", **alice)]),
        lambda: store.get_episode("00000000-0000-0000-0000-000000000000", **alice),
        lambda: store.recall("turn", **alice),
        lambda: store.recall_facts("lives", **alice),
        lambda: store.session_messages("stream", **alice),
        lambda: store.add_fact(Fact(subject="a", predicate="lives_in", object="Oslo", **alice)),
        lambda: store.retract_fact("00000000-0000-0000-0000-000000000000", **alice),
        lambda: store.fact_history(**alice),
        lambda: store.update_block("b", "x", **alice),
        lambda: store.append_block("b", "x", **alice),
        lambda: store.working(**alice),
        lambda: store.block_history("b", **alice),
        lambda: store.profile(**alice),
        lambda: store.forget(user_id="nobody"),
        lambda: store.export(**alice),
    ]


async def test_stop_and_restart_under_load(own_server: OwnServer) -> None:
    async with MemoryStore.open(own_server.url, engine_options={"connect_timeout": 5}) as store:
        acked: list[Episode] = []
        failed: list[Episode] = []
        other_errors: list[BaseException] = []
        reads = {"ok": 0, "unavailable": 0}
        done = asyncio.Event()

        async def writer(name: str) -> None:
            i = 0
            while not done.is_set():
                episode = Episode(user_id="alice", session_id="stream", input=f"turn {name}{i}")
                i += 1
                try:
                    await store.remember(episode)
                    acked.append(episode)
                except Unavailable:
                    failed.append(episode)  # outcome unknown: retried below
                    await asyncio.sleep(0.01)
                except BaseException as error:  # any other failure is a bug
                    other_errors.append(error)
                    raise

        async def reader() -> None:
            while not done.is_set():
                try:
                    await store.recall("turn", user_id="alice", limit=3)
                    reads["ok"] += 1
                except Unavailable:
                    reads["unavailable"] += 1
                    await asyncio.sleep(0.01)

        tasks = [asyncio.create_task(writer(n)) for n in "ab"] + [asyncio.create_task(reader())]
        await until(lambda: len(acked) >= 30)

        await asyncio.to_thread(own_server.stop)
        # While it is down every call fails fast with Unavailable, nothing hangs.
        for call in every_call(store):
            with pytest.raises(Unavailable):
                async with asyncio.timeout(HANG_GUARD_S):
                    await call()
        down_failures = len(failed)
        await until(lambda: len(failed) >= down_failures + 5)

        await asyncio.to_thread(own_server.start)
        acked_at_restart = len(acked)
        await until(lambda: len(acked) >= acked_at_restart + 30)  # same store object works
        done.set()
        await asyncio.gather(*tasks)
        assert not other_errors
        print(f"\nFAULTSTATS acked={len(acked)} failed={len(failed)} reads={reads}")
        assert reads["ok"] and reads["unavailable"]

        stored = {e.id for e in await store.recall("", user_id="alice", limit=10_000)}
        missing = [e.input for e in acked if e.id not in stored]
        assert not missing, f"acknowledged writes lost: {missing[:5]}"

        # The documented retry recipe: same episode id again; Conflict means it landed.
        for episode in failed:
            try:
                await store.remember(episode)
            except Conflict:
                pass
        stored = {e.id for e in await store.recall("", user_id="alice", limit=10_000)}
        assert {e.id for e in acked + failed} <= stored
        # Nothing doubled either.
        assert (await store.profile(user_id="alice")).episode_count == len(stored)


async def test_frozen_server_times_out_instead_of_hanging(own_server: OwnServer) -> None:
    options = {"connect_timeout": 2, "command_timeout": 2}
    async with MemoryStore.open(own_server.url, engine_options=options) as store:
        await store.remember(Episode(user_id="bob", session_id="s", input="before"))
        frozen = own_server.processes()
        for process in frozen:
            process.send_signal(signal.SIGSTOP)  # like a network partition
        try:
            for call in (
                lambda: store.remember(Episode(user_id="bob", session_id="s", input="x")),
                lambda: store.profile(user_id="bob"),
            ):
                with pytest.raises(Unavailable):
                    async with asyncio.timeout(HANG_GUARD_S):
                        await call()
        finally:
            for process in frozen:
                process.send_signal(signal.SIGCONT)
        await store.remember(Episode(user_id="bob", session_id="s", input="after"))
        inputs = {e.input for e in await store.recall("", user_id="bob", limit=50)}
        assert {"before", "after"} <= inputs
