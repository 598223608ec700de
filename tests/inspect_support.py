"""Seed a tenant with a supersession and a retraction; run the inspector in a thread."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memstore import Episode, Fact, MemoryStore

XSS = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"
BOB_SECRET = "zebracorn-bob-secret"
TOKEN = "test-token-0123456789abcdef"


@dataclass
class Seeded:
    paris_episode: str
    london_episode: str
    correction_at: datetime  # when London was recorded (Paris superseded)
    retracted_at: datetime


class StepClock:
    """Each call a second later: distinct, ordered transaction times without sleeping."""

    def __init__(self) -> None:
        self.now = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


async def seed(url: str) -> Seeded:
    clock = StepClock()
    async with MemoryStore.open(url, clock=clock) as store:
        paris = await store.remember(
            Episode(
                session_id="trip",
                user_id="alice",
                input="I moved to Paris in March",
                output="Bonjour!",
            )
        )
        london = await store.remember(
            Episode(
                session_id="trip",
                user_id="alice",
                input=f"Now I live in London {XSS}",
                output="Cheerio",
            )
        )
        await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="lives_in",
                object="Paris",
                valid_from=datetime(2026, 3, 1, tzinfo=UTC),
                sources=[paris],
            )
        )
        clock.now += timedelta(days=1)
        correction_at = clock.now + timedelta(seconds=1)
        await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="lives_in",
                object=f"London {XSS}",
                valid_from=datetime(2026, 6, 1, tzinfo=UTC),
                sources=[london],
                confidence=0.8,
            )
        )
        pet = await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="owns",
                object="a cat named Mimi",
                valid_from=datetime(2026, 4, 1, tzinfo=UTC),
            )
        )
        clock.now += timedelta(days=1)
        retracted_at = clock.now + timedelta(seconds=1)
        await store.retract_fact(pet, user_id="alice")
        await store.update_block("persona", "Be brief.", user_id="alice")
        await store.append_block("persona", f"\nUse metric units. {XSS}", user_id="alice")
        await store.threads.append(
            "t1", {"text": XSS}, from_id="planner", to_id="coder", user_id="alice"
        )
        await store.working_memory(session_id="trip", user_id="alice").set("step", XSS)
        # Another tenant whose data must never appear on alice's page.
        await store.remember(
            Episode(
                session_id="b",
                user_id="bob",
                input=f"my password is {BOB_SECRET} paris",
                output="noted",
            )
        )
        await store.add_fact(
            Fact(
                user_id="bob",
                subject="bob",
                predicate="lives_in",
                object=BOB_SECRET,
                valid_from=datetime(2026, 1, 1, tzinfo=UTC),
            )
        )
    return Seeded(paris, london, correction_at, retracted_at)


def seed_sync(url: str) -> Seeded:
    return asyncio.run(seed(url))


@contextmanager
def running_inspector(
    url: str, *, token: str | None = TOKEN, max_rows: int = 2000
) -> Iterator[str]:
    """Serve the inspector on a free loopback port in a thread; yields its base URL."""
    from memstore.inspect.server import Inspector

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = Inspector(url, host="127.0.0.1", port=port, token=token, max_rows=max_rows)
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported by the caller
            failure.append(exc)

    thread = threading.Thread(target=serve, name="memstore-inspect-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if failure or not thread.is_alive():
                raise RuntimeError(f"inspector did not start: {failure}")
            if time.monotonic() > deadline:
                raise RuntimeError("inspector did not start within 60 s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        thread.join(timeout=30)
        sock.close()
        if thread.is_alive():
            raise RuntimeError("inspector thread did not stop")
