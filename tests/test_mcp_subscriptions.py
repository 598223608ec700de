"""``memstore mcp`` resource subscriptions, with the MCP SDK's own client.

The server runs in a subprocess (stdio, or streamable HTTP on 127.0.0.1); the
changes are made by another store in the test process, so a notification
proves the change travelled through the database from one process to another.
Both wires are exercised: ``resources/subscribe`` (handshake-era clients,
``mode="legacy"``) and ``subscriptions/listen`` (2026-07-28 clients).

"Nothing arrives" is checked against a sentinel: after the change that must
not notify, a change that must is made in the same tenant's feed, and the
sentinel's notification must be the first one.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from memstore import MemoryStore
from memstore.schema.migrate import upgrade

pytest.importorskip("mcp", reason="needs the mcp extra: pip install -e '.[mcp]'")

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated, Subscription
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from test_mcp_server import ROOT, HttpServer, _server_env, stdio_client

PERSONA = "memstore://blocks/persona"
GOALS = "memstore://blocks/goals"
TASKS = "memstore://threads/tasks"
WAIT = 30.0  # seconds: generous for a loaded machine; a passing run takes far less


@pytest.fixture
def private_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-mcpsub-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sqlite_url(private_dir: Path) -> str:
    url = f"sqlite+aiosqlite:///{private_dir / 'mcp.db'}"
    asyncio.run(upgrade(url))
    return url


class Inbox:
    """``message_handler`` of a legacy client: the URIs of ``resources/updated`` received."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str] = asyncio.Queue()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            await self.queue.put(str(message.params.uri))

    async def next(self) -> str:
        return await asyncio.wait_for(self.queue.get(), WAIT)


async def _next_uri(sub: Subscription) -> str:
    event = await asyncio.wait_for(anext(sub), WAIT)
    assert isinstance(event, ResourceUpdated), event
    return event.uri


@asynccontextmanager
async def _legacy(url: str, user: str, inbox: Inbox) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "mcp", "--url", url, "--user-id", user],
        cwd=str(ROOT),
        env=_server_env(),
    )
    async with Client(params, mode="legacy", message_handler=inbox) as client:
        yield client


async def _subscribe(client: Client, uri: str, *, on: bool = True) -> None:
    # The SDK marks resources/subscribe deprecated (removed at 2026-07-28); legacy
    # clients still use it, and this server still serves it to them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if on:
            await client.subscribe_resource(uri)
        else:
            await client.unsubscribe_resource(uri)


async def _legacy_subscribe_scenario(url: str) -> None:
    inbox = Inbox()
    async with MemoryStore.open(url) as writer, _legacy(url, "alice", inbox) as alice:
        caps = alice.server_capabilities.resources
        assert caps is not None and caps.subscribe is True
        await _subscribe(alice, PERSONA)
        await _subscribe(alice, TASKS)

        await writer.update_block("persona", "Alice likes haiku.", user_id="alice")
        assert await inbox.next() == PERSONA
        read = await alice.read_resource(PERSONA, cache_mode="bypass")
        assert [c.text for c in read.contents] == ["Alice likes haiku."]

        await writer.threads.append(
            "tasks", {"do": "book"}, from_id="a", to_id="b", user_id="alice"
        )
        assert await inbox.next() == TASKS
        body = json.loads((await alice.read_resource(TASKS, cache_mode="bypass")).contents[0].text)
        assert body["length"] == 1 and body["slots"][0]["payload"] == {"do": "book"}

        # Another tenant's block of the same name, an unsubscribed block: no notification.
        await writer.update_block("persona", "Bob's persona.", user_id="bob")
        await writer.update_block("goals", "unwatched", user_id="alice")
        await writer.threads.append("tasks", "sentinel", from_id="a", to_id="b", user_id="alice")
        assert await inbox.next() == TASKS

        # Unsubscribed: persona changes no longer notify; the thread still does.
        await _subscribe(alice, PERSONA, on=False)
        await writer.update_block("persona", "Alice again.", user_id="alice")
        await writer.threads.append("tasks", "sentinel 2", from_id="a", to_id="b", user_id="alice")
        assert await inbox.next() == TASKS
        assert inbox.queue.empty()

        with pytest.raises(MCPError, match="unknown resource"):
            await _subscribe(alice, "file:///etc/passwd")


@pytest.mark.sqlite
async def test_legacy_subscribe_sqlite(sqlite_url: str) -> None:
    await _legacy_subscribe_scenario(sqlite_url)


@pytest.mark.postgres
def test_legacy_subscribe_postgres(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("mcpsub")

    async def run() -> None:
        await upgrade(url)
        await _legacy_subscribe_scenario(url)

    asyncio.run(run())


async def _listen_scenario(url: str) -> None:
    async with MemoryStore.open(url) as writer, stdio_client(url, "--user-id", "alice") as alice:
        caps = alice.server_capabilities.resources
        assert caps is not None and caps.subscribe is True
        async with alice.listen(resource_subscriptions=[PERSONA, TASKS]) as sub:
            assert sub.honored.resource_subscriptions == [PERSONA, TASKS]
            # Bob's block of the same name, an unwatched block of alice's: the thread's
            # append after them is the first event.
            await writer.update_block("persona", "Bob likes prose.", user_id="bob")
            await writer.update_block("goals", "unwatched", user_id="alice")
            await writer.threads.append("tasks", 1, from_id="a", to_id="b", user_id="alice")
            assert await _next_uri(sub) == TASKS
            await writer.update_block("persona", "Alice likes haiku.", user_id="alice")
            assert await _next_uri(sub) == PERSONA
        # A listen stream honours memstore:// URIs only, and refuses unknown ones.
        with pytest.raises(MCPError, match="unknown resource"):
            async with alice.listen(resource_subscriptions=["memstore://facts/1"]):
                pass


@pytest.mark.sqlite
async def test_listen_over_stdio_sqlite(sqlite_url: str) -> None:
    await _listen_scenario(sqlite_url)


@pytest.mark.postgres
def test_listen_over_stdio_postgres(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("mcplisten")

    async def run() -> None:
        await upgrade(url)
        await _listen_scenario(url)

    asyncio.run(run())


@pytest.mark.sqlite
async def test_listen_over_http_is_per_tenant(sqlite_url: str, private_dir: Path) -> None:
    # alice and bob on one HTTP server, both listening on the same URI: each is told
    # about their own block only.
    server = HttpServer(sqlite_url, private_dir, "--allow-user", "alice", "--allow-user", "bob")
    try:
        async with (
            MemoryStore.open(sqlite_url) as writer,
            server.client({"X-Memstore-User": "alice"}) as alice,
            server.client({"X-Memstore-User": "bob"}) as bob,
            alice.listen(resource_subscriptions=[PERSONA]) as alice_sub,
            bob.listen(resource_subscriptions=[PERSONA, GOALS]) as bob_sub,
        ):
            await writer.update_block("persona", "Alice likes haiku.", user_id="alice")
            assert await _next_uri(alice_sub) == PERSONA
            # Bob's first event is his own goals, not alice's persona before it.
            await writer.update_block("goals", "sentinel", user_id="bob")
            assert await _next_uri(bob_sub) == GOALS
            await writer.update_block("persona", "Bob likes prose.", user_id="bob")
            assert await _next_uri(bob_sub) == PERSONA
            read = await bob.read_resource(PERSONA, cache_mode="bypass")
            assert [c.text for c in read.contents] == ["Bob likes prose."]
        # Over stateless HTTP there is no connection to notify later: a handshake-era
        # client is not offered resources/subscribe.
        async with create_mcp_http_client(headers={"X-Memstore-User": "alice"}) as http:
            transport = streamable_http_client(server.endpoint, http_client=http)
            async with Client(transport, mode="legacy") as legacy:
                caps = legacy.server_capabilities.resources
                assert caps is not None and caps.subscribe is False
    finally:
        server.stop()


async def _one_tenant_cannot_lock_out_another(url: str, private_dir: Path) -> None:
    # Room for four streams on the server, two per tenant.
    limits = ("--max-listen-streams", "4", "--max-listen-streams-per-tenant", "2")
    server = HttpServer(url, private_dir, "--allow-user", "alice", "--allow-user", "bob", *limits)
    try:
        async with (
            MemoryStore.open(url) as writer,
            server.client({"X-Memstore-User": "alice"}) as alice,
            server.client({"X-Memstore-User": "bob"}) as bob,
            AsyncExitStack() as streams,
        ):
            # alice asks for as many streams as the whole server holds.
            alice_subs: list[Subscription] = []
            refused: MCPError | None = None
            for _ in range(4):
                try:
                    listen = alice.listen(resource_subscriptions=[PERSONA])
                    alice_subs.append(await streams.enter_async_context(listen))
                except MCPError as exc:
                    refused = exc
                    break
            # bob still gets his: both of them, and they deliver.
            bob_subs = [
                await streams.enter_async_context(bob.listen(resource_subscriptions=[PERSONA]))
                for _ in range(2)
            ]
            assert len(alice_subs) == 2
            assert refused is not None and "this tenant has 2 listen streams" in str(refused)
            with pytest.raises(MCPError, match="this tenant has 2 listen streams"):
                async with bob.listen(resource_subscriptions=[PERSONA]):
                    pass
            await writer.update_block("persona", "Bob likes prose.", user_id="bob")
            for sub in bob_subs:
                assert await _next_uri(sub) == PERSONA
            await writer.update_block("persona", "Alice likes haiku.", user_id="alice")
            for sub in alice_subs:
                assert await _next_uri(sub) == PERSONA
        # Closed streams are given back: alice can listen again.
        async with (
            server.client({"X-Memstore-User": "alice"}) as alice,
            alice.listen(resource_subscriptions=[PERSONA]) as again,
            MemoryStore.open(url) as writer,
        ):
            await writer.update_block("persona", "Alice, later.", user_id="alice")
            assert await _next_uri(again) == PERSONA
    finally:
        server.stop()


@pytest.mark.sqlite
async def test_one_tenant_cannot_lock_out_another_sqlite(
    sqlite_url: str, private_dir: Path
) -> None:
    await _one_tenant_cannot_lock_out_another(sqlite_url, private_dir)


@pytest.mark.postgres
def test_one_tenant_cannot_lock_out_another_postgres(pg_cluster: Any, private_dir: Path) -> None:
    url = pg_cluster.create_database("mcplimits")

    async def run() -> None:
        await upgrade(url)
        await _one_tenant_cannot_lock_out_another(url, private_dir)

    asyncio.run(run())
