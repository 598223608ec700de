"""Subprocess side of the fault tests (run as ``python tests/fault_worker.py MODE URL ...``).

Modes:
  pause-batch URL N   remember_many(N episodes); freeze just before its COMMIT (prints PAUSED)
  pause-fact URL      correct alice's lives_in; freeze after its first fact INSERT (PAUSED)
  stream URL          endless batches / corrections / block appends, ``ACK i`` after each
  contend URL NAME K  print READY, wait for a line on stdin, then K rounds of writes
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from memstore import Episode, Fact, MemoryStore

BATCH = 20


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def freeze_after_first(prefix: str) -> None:
    """Block the process inside the open transaction once ``prefix`` has executed
    (on every engine of the process: the store's is its only one)."""

    @event.listens_for(Engine, "after_cursor_execute")
    def after(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith(prefix):
            say("PAUSED")
            time.sleep(3600)  # the parent SIGKILLs us here


def freeze_before_commit_of(prefix: str) -> None:
    """Block the process just before committing a transaction that ran ``prefix``.

    Rows a batch writes may go by COPY (Postgres, large batches), which no
    cursor event sees; the commit event sees every path.
    """
    armed: list[bool] = []

    @event.listens_for(Engine, "after_cursor_execute")
    def after(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith(prefix):
            armed.append(True)

    @event.listens_for(Engine, "commit")
    def commit(_conn: Any) -> None:
        if armed:
            say("PAUSED")
            time.sleep(3600)  # the parent SIGKILLs us here


async def pause_batch(url: str, n: int) -> None:
    async with MemoryStore.open(url) as store:
        # the turn counter upsert opens the transaction that writes the batch
        freeze_before_commit_of("INSERT INTO SESSION_TURNS")
        await store.remember_many(
            [Episode(user_id="alice", session_id="big", input=f"turn {i}") for i in range(n)]
        )
    say("COMMITTED")  # never reached


async def pause_fact(url: str) -> None:
    async with MemoryStore.open(url) as store:
        freeze_after_first("INSERT INTO FACTS")
        await store.add_fact(
            Fact(user_id="alice", subject="alice", predicate="lives_in", object="Berlin")
        )
    say("COMMITTED")


async def stream(url: str) -> None:
    async with MemoryStore.open(url) as store:
        cities = ["Paris", "London", "Rome"]
        for i in range(1_000_000):
            await store.remember_many(
                [
                    Episode(user_id="alice", session_id=f"b{i}", input=f"{i}.{j}")
                    for j in range(BATCH)
                ]
            )
            await store.add_fact(
                Fact(user_id="alice", subject="alice", predicate="lives_in", object=cities[i % 3])
            )
            await store.append_block("log", f"[{i}]", user_id="alice")
            say(f"ACK {i}")


async def contend(url: str, name: str, rounds: int) -> None:
    async with MemoryStore.open(url) as store:
        await store.profile(user_id="alice")  # connected and schema checked
        say("READY")
        await asyncio.to_thread(sys.stdin.readline)
        for i in range(rounds):
            await store.remember(Episode(user_id="alice", session_id=name, input=f"{name}-{i}"))
            await store.add_fact(
                Fact(user_id="alice", subject=name, predicate="likes", object=f"thing {i}")
            )
            await store.append_block("log", f"<{name}:{i}>", user_id="alice")
    say("DONE")


def main() -> None:
    mode, url, *rest = sys.argv[1:]
    if mode == "pause-batch":
        asyncio.run(pause_batch(url, int(rest[0])))
    elif mode == "pause-fact":
        asyncio.run(pause_fact(url))
    elif mode == "stream":
        asyncio.run(stream(url))
    elif mode == "contend":
        asyncio.run(contend(url, rest[0], int(rest[1])))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
