"""``memstore mcp`` end to end with the MCP SDK's own client.

Over stdio (a spawned ``memstore mcp`` process; SQLite in a private temp dir, and
once on the Postgres test database) and over streamable HTTP on 127.0.0.1 (the
server in a subprocess on a free port, stopped in teardown).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from memstore import Episode, Fact, MemoryStore
from memstore.schema.migrate import upgrade

pytest.importorskip("mcp", reason="needs the mcp extra: pip install -e '.[mcp]'")

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ["search_memory", "load_memory", "remember_fact", "remember", "get_context"]


@pytest.fixture
def private_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-mcp-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sqlite_url(private_dir: Path) -> str:
    url = f"sqlite+aiosqlite:///{private_dir / 'mcp.db'}"
    asyncio.run(upgrade(url))
    return url


def _server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # The worktree's memstore, never an installed copy; no inherited tenant.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


def stdio_client(url: str, *args: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "mcp", "--url", url, *args],
        cwd=str(ROOT),
        env=_server_env(env),
    )
    return Client(params)


async def _seed(url: str) -> dict[str, str]:
    async with MemoryStore.open(url) as store:
        await store.update_block("persona", "Alice likes short answers.", user_id="alice")
        await store.update_block("bob notes", "Bob's secret plan.", user_id="bob")
        bob_ep = await store.remember(
            Episode(
                session_id="b1", user_id="bob", input="My password hint is tulip", output="Noted."
            )
        )
        bob_fact = await store.add_fact(
            Fact(user_id="bob", subject="bob", predicate="lives_in", object="Oslo")
        )
    return {"bob_episode": bob_ep, "bob_fact": bob_fact}


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _exercise_as_alice(client: Client, seeded: dict[str, str]) -> str:
    """Tool calls, resources, isolation and errors as tenant alice; her episode id."""
    tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == TOOLS
    for tool in tools:
        schema = tool.input_schema
        assert "user_id" not in schema["properties"], tool.name
        assert schema["additionalProperties"] is False, tool.name

    stored = await client.call_tool(
        "remember", {"input": "I adopted a cat named Miso", "output": "Lovely!", "session_id": "s1"}
    )
    assert not stored.is_error, _text(stored)
    episode_id = stored.structured_content["id"]
    assert episode_id.startswith("episode:")
    assert json.loads(_text(stored)) == stored.structured_content

    fact = await client.call_tool(
        "remember_fact", {"subject": "alice", "predicate": "lives_in", "object": "Paris"}
    )
    assert not fact.is_error, _text(fact)

    found = await client.call_tool("search_memory", {"query": "cat Miso", "limit": 5})
    ids = [r["id"] for r in found.structured_content["results"]]
    assert episode_id in ids
    loaded = await client.call_tool("load_memory", {"id": episode_id})
    assert loaded.structured_content["input"] == "I adopted a cat named Miso"

    ctx = await client.call_tool(
        "get_context", {"query": "where does alice live", "session_id": "s1", "max_tokens": 800}
    )
    ctx_ids = [item["id"] for item in ctx.structured_content["items"]]
    assert "block:persona" in ctx_ids and episode_id in ctx_ids
    assert "Paris" in ctx.structured_content["text"]
    assert ctx.structured_content["used_tokens"] <= 800

    # Resources: alice's blocks only.
    resources = (await client.list_resources()).resources
    assert [str(r.uri) for r in resources] == ["memstore://blocks/persona"]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [
        "memstore://blocks/{name}",
        "memstore://threads/{thread_id}",
    ]
    read = await client.read_resource("memstore://blocks/persona")
    assert [c.text for c in read.contents] == ["Alice likes short answers."]

    # Tenant isolation: bob's data is invisible, his ids are NotFound.
    for query in ("password hint tulip", "Oslo"):
        result = await client.call_tool("search_memory", {"query": query})
        assert not any(
            "tulip" in r["text"] or "Oslo" in r["text"]
            for r in result.structured_content["results"]
        )
    for bob_id in (
        f"episode:{seeded['bob_episode']}",
        f"fact:{seeded['bob_fact']}",
        "block:bob notes",
    ):
        denied = await client.call_tool("load_memory", {"id": bob_id})
        assert denied.is_error and _text(denied).startswith("NotFound:"), _text(denied)
    with pytest.raises(MCPError, match="NotFound"):
        await client.read_resource("memstore://blocks/bob%20notes")

    # Errors are tool errors carrying the MemstoreError message; a tenant argument
    # is refused, not honoured.
    extra = await client.call_tool("search_memory", {"query": "x", "user_id": "bob"})
    assert extra.is_error
    assert _text(extra) == (
        "InvalidInput: search_memory: unexpected argument 'user_id'; "
        "allowed: query, kind, limit, min_score"
    )
    extra = await client.call_tool(
        "remember", {"input": "a", "output": "b", "session_id": "s", "user_id": "bob"}
    )
    assert extra.is_error and "unexpected argument 'user_id'" in _text(extra)
    bad = await client.call_tool("get_context", {"max_tokens": 0})
    assert bad.is_error and _text(bad).startswith("InvalidInput: get_context: argument")
    nul = await client.call_tool("remember", {"input": "a\x00b", "output": "", "session_id": "s1"})
    assert nul.is_error and _text(nul).startswith("InvalidInput:"), _text(nul)
    unknown = await client.call_tool("drop_tables", {})
    assert unknown.is_error and "unknown tool 'drop_tables'" in _text(unknown)
    return str(episode_id)


async def _assert_tenants(url: str, episode_id: str) -> None:
    """In the database: alice's writes are alice's, bob's data is untouched."""
    async with MemoryStore.open(url) as store:
        alice = await store.export(user_id="alice")
        bob = await store.export(user_id="bob")
    alice_eps = {r["id"] for r in alice["tables"]["episodes"]}
    assert alice_eps == {episode_id.removeprefix("episode:")}  # the NUL one wrote nothing
    assert [r["object"] for r in alice["tables"]["facts"]] == ["Paris"]
    assert len(bob["tables"]["episodes"]) == 1 and len(bob["tables"]["facts"]) == 1


@pytest.mark.sqlite
async def test_stdio_end_to_end_sqlite(sqlite_url: str) -> None:
    seeded = await _seed(sqlite_url)
    async with stdio_client(sqlite_url, "--user-id", "alice") as client:
        episode_id = await _exercise_as_alice(client, seeded)
    await _assert_tenants(sqlite_url, episode_id)


@pytest.mark.postgres
def test_stdio_end_to_end_postgres(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("mcp")  # runs its own event loop: a sync test

    async def run() -> None:
        await upgrade(url)
        seeded = await _seed(url)
        # The tenant from the environment this time.
        async with stdio_client(url, env={"MEMSTORE_USER_ID": "alice"}) as client:
            episode_id = await _exercise_as_alice(client, seeded)
        await _assert_tenants(url, episode_id)

    asyncio.run(run())


@pytest.mark.sqlite
async def test_stdio_legacy_handshake_mode(sqlite_url: str) -> None:
    # mode="legacy": the pre-2026 initialize handshake instead of server/discover.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "mcp", "--url", sqlite_url, "--user-id", "carol"],
        cwd=str(ROOT),
        env=_server_env(),
    )
    async with Client(params, mode="legacy") as client:
        stored = await client.call_tool(
            "remember", {"input": "hi", "output": "hello", "session_id": "s"}
        )
        assert not stored.is_error, _text(stored)
        assert (await client.list_resources()).resources == []
    async with MemoryStore.open(sqlite_url) as store:
        assert len(await store.session_messages("s", user_id="carol")) == 2


def _run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", "mcp", *args],
        cwd=ROOT,
        env=_server_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.sqlite
def test_cli_refuses_bad_setups(sqlite_url: str) -> None:
    no_user = _run_cli("--url", sqlite_url)
    assert no_user.returncode == 2 and "--user-id ID or $MEMSTORE_USER_ID" in no_user.stderr
    no_allow = _run_cli("--url", sqlite_url, "--transport", "http", "--port", "1")
    assert no_allow.returncode == 2 and "--allow-user" in no_allow.stderr
    public = _run_cli(
        "--url",
        sqlite_url,
        "--transport",
        "http",
        "--host",
        "0.0.0.0",
        "--port",
        "1",
        "--allow-user",
        "alice",
    )
    assert public.returncode == 2
    assert "non-loopback host '0.0.0.0' without a bearer token" in public.stderr
    for per_tenant, total in (("0", "4"), ("5", "4")):
        limits = _run_cli(
            "--url",
            sqlite_url,
            "--transport",
            "http",
            "--port",
            "1",
            "--allow-user",
            "alice",
            "--max-listen-streams-per-tenant",
            per_tenant,
            "--max-listen-streams",
            total,
        )
        assert limits.returncode == 2
        assert "--max-listen-streams-per-tenant must be between 1 and" in limits.stderr
    bad_tenant = _run_cli("--url", sqlite_url, "--user-id", "__reserved")
    assert bad_tenant.returncode == 1 and "InvalidInput" in bad_tenant.stderr
    assert "Traceback" not in bad_tenant.stderr


def test_cli_without_the_extra_says_what_to_install() -> None:
    # sys.modules[name] = None makes that import fail as if the package were absent.
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from memstore.cli import main\n"
        "raise SystemExit(main(['mcp', '--user-id', 'alice']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_server_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "pip install 'memstore[mcp]'" in done.stderr and "Traceback" not in done.stderr


def test_import_memstore_and_other_commands_do_not_import_mcp() -> None:
    code = (
        "import sys, memstore, memstore.cli\n"
        "memstore.cli.build_parser().parse_args(['mcp', '--user-id', 'a'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'mcp_types', 'uvicorn', 'starlette')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_server_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"


# ---- streamable HTTP ----------------------------------------------------------------


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class HttpServer:
    def __init__(self, url: str, private_dir: Path, *extra: str, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = _free_port(host)
        self.endpoint = f"http://{host}:{self.port}/mcp"
        self.log = private_dir / f"server-{self.port}.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memstore",
                    "mcp",
                    "--transport",
                    "http",
                    "--url",
                    url,
                    "--host",
                    host,
                    "--port",
                    str(self.port),
                    *extra,
                ],
                cwd=ROOT,
                env=_server_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                socket.create_connection((host, self.port), timeout=0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"server did not listen: {self.log.read_text()}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)

    @asynccontextmanager
    async def client(self, headers: dict[str, str]) -> AsyncIterator[Client]:
        async with create_mcp_http_client(headers=headers) as http:
            async with Client(streamable_http_client(self.endpoint, http_client=http)) as c:
                yield c


@pytest.fixture
def http_server(sqlite_url: str, private_dir: Path) -> Iterator[HttpServer]:
    server = HttpServer(sqlite_url, private_dir, "--allow-user", "alice", "--allow-user", "bob")
    try:
        yield server
    finally:
        server.stop()
    assert server.process.returncode is not None


@pytest.mark.sqlite
async def test_http_end_to_end_and_isolation(http_server: HttpServer, sqlite_url: str) -> None:
    seeded = await _seed(sqlite_url)
    async with http_server.client({"X-Memstore-User": "alice"}) as alice:
        episode_id = await _exercise_as_alice(alice, seeded)
    async with http_server.client({"X-Memstore-User": "bob"}) as bob:
        found = await bob.call_tool("search_memory", {"query": "cat Miso"})
        assert all("Miso" not in r["text"] for r in found.structured_content["results"])
        denied = await bob.call_tool("load_memory", {"id": episode_id})
        assert denied.is_error and _text(denied).startswith("NotFound:")
        assert [str(r.uri) for r in (await bob.list_resources()).resources] == [
            "memstore://blocks/bob%20notes"
        ]
        read = await bob.read_resource("memstore://blocks/bob%20notes")
        assert [c.text for c in read.contents] == ["Bob's secret plan."]
    await _assert_tenants(sqlite_url, episode_id)


@pytest.mark.sqlite
async def test_http_concurrent_tenants_stay_apart(http_server: HttpServer, sqlite_url: str) -> None:
    # Interleaved requests of two tenants on one server: each lands in its own tenant.
    async def turns(user: str) -> None:
        async with http_server.client({"X-Memstore-User": user}) as client:
            results = await asyncio.gather(
                *(
                    client.call_tool(
                        "remember", {"input": f"{user} turn {i}", "output": "", "session_id": user}
                    )
                    for i in range(10)
                )
            )
            assert not any(r.is_error for r in results)

    await asyncio.gather(turns("alice"), turns("bob"))
    async with MemoryStore.open(sqlite_url) as store:
        for user in ("alice", "bob"):
            dump = await store.export(user_id=user)
            assert sorted(r["input"] for r in dump["tables"]["episodes"]) == sorted(
                f"{user} turn {i}" for i in range(10)
            )


def _post(endpoint: str, headers: dict[str, str | bytes]) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "remember",
            "arguments": {"input": "intruder", "output": "", "session_id": "x"},
        },
    }
    return httpx2.post(
        endpoint,
        json=body,
        headers={"Accept": "application/json, text/event-stream", **headers},
        timeout=30,
    )


@pytest.mark.sqlite
async def test_http_refuses_unlisted_and_missing_tenant(
    http_server: HttpServer, sqlite_url: str
) -> None:
    unlisted = _post(http_server.endpoint, {"X-Memstore-User": "mallory"})
    assert unlisted.status_code == 403 and "allow-list" in unlisted.json()["error"]
    missing = _post(http_server.endpoint, {})
    assert missing.status_code == 401 and "X-Memstore-User" in missing.json()["error"]
    for headers in ({"X-Memstore-User": "mallory"}, {}, {"X-Memstore-User": "ALICE"}):
        with pytest.raises(BaseException) as refused:
            async with http_server.client(headers) as client:
                await client.list_tools()
        # The SDK surfaces the HTTP refusal as an MCPError (inside its task groups).
        assert (
            refused.group_contains(MCPError)
            if isinstance(refused.value, BaseExceptionGroup)
            else isinstance(refused.value, MCPError)
        )
    async with MemoryStore.open(sqlite_url) as store:
        for user in ("mallory", "alice", "ALICE"):
            assert (await store.export(user_id=user))["tables"]["episodes"] == []


@pytest.mark.sqlite
async def test_http_bearer_token(sqlite_url: str, private_dir: Path) -> None:
    server = HttpServer(sqlite_url, private_dir, "--allow-user", "alice", "--token", "s3cret")
    try:
        no_token = _post(server.endpoint, {"X-Memstore-User": "alice"})
        assert no_token.status_code == 401
        assert no_token.headers["www-authenticate"].startswith("Bearer")
        wrong = _post(
            server.endpoint, {"X-Memstore-User": "alice", "Authorization": "Bearer guess"}
        )
        assert wrong.status_code == 401
        async with server.client(
            {"X-Memstore-User": "alice", "Authorization": "Bearer s3cret"}
        ) as client:
            stored = await client.call_tool(
                "remember", {"input": "with token", "output": "", "session_id": "t"}
            )
            assert not stored.is_error, _text(stored)
    finally:
        server.stop()
    async with MemoryStore.open(sqlite_url) as store:
        dump = await store.export(user_id="alice")
    # Only the authenticated call wrote; the refused ones wrote nothing.
    assert [r["input"] for r in dump["tables"]["episodes"]] == ["with token"]


@pytest.mark.sqlite
@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2"])
async def test_http_checks_host_and_origin_on_every_loopback_address(
    bind: str, sqlite_url: str, private_dir: Path
) -> None:
    # A page on evil.example whose name re-resolves to the bind address (DNS rebinding)
    # sends its own name as Host and Origin. The SDK only checks 127.0.0.1/localhost/::1.
    server = HttpServer(sqlite_url, private_dir, "--allow-user", "alice", host=bind)
    alice = {"X-Memstore-User": "alice"}
    own = f"{bind}:{server.port}"
    try:
        rebound = _post(
            server.endpoint,
            {
                **alice,
                "Host": f"evil.example:{server.port}",
                "Origin": f"http://evil.example:{server.port}",
            },
        )
        assert rebound.status_code == 421, rebound.text
        for origin in (
            f"http://evil.example:{server.port}",
            "null",
            "http://127.0.0.1.evil.example",
        ):
            foreign = _post(server.endpoint, {**alice, "Host": own, "Origin": origin})
            assert foreign.status_code == 403, (origin, foreign.text)
        # Loopback names and origins are served, with or without an Origin.
        for headers in (
            {"Host": own},
            {"Host": f"localhost:{server.port}", "Origin": f"http://localhost:{server.port}"},
            {"Host": own, "Origin": f"http://{own}"},
        ):
            served = _post(server.endpoint, {**alice, **headers})
            assert served.status_code == 200, (headers, served.text)
    finally:
        server.stop()
    async with MemoryStore.open(sqlite_url) as store:
        dump = await store.export(user_id="alice")
    assert [r["input"] for r in dump["tables"]["episodes"]] == ["intruder"] * 3


def test_gate_refuses_a_public_bind_without_a_token() -> None:
    from memstore.errors import InvalidInput
    from memstore.mcp.gate import TenantGate

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not reached")

    with pytest.raises(InvalidInput, match="without a bearer token"):
        TenantGate(app, allowed_users=["alice"], token=None, host="0.0.0.0")
    TenantGate(app, allowed_users=["alice"], token="t", host="0.0.0.0")
    TenantGate(app, allowed_users=["alice"], token=None, host="127.0.0.2")


@pytest.mark.sqlite
async def test_http_non_ascii_tenants(sqlite_url: str, private_dir: Path) -> None:
    # "josÃ©" is what josé's UTF-8 bytes read as latin-1: with one decoding in one
    # place, neither can act as the other.
    confusable = "josé".encode().decode("latin-1")
    assert confusable == "josÃ©"
    server = HttpServer(
        sqlite_url,
        private_dir,
        *("--allow-user", "josé", "--allow-user", confusable, "--allow-user", "李"),
    )
    try:
        for user in ("josé", confusable, "李"):
            async with server.client({"X-Memstore-User": user.encode()}) as client:
                stored = await client.call_tool(
                    "remember", {"input": f"I am {user}", "output": "", "session_id": "s"}
                )
                assert not stored.is_error, (user, _text(stored))
                found = await client.call_tool("search_memory", {"query": "I am"})
                texts = [r["text"] for r in found.structured_content["results"]]
                assert len(texts) == 1 and texts[0].endswith(f"user: I am {user}"), texts
        # Off the list, or not UTF-8 (josé in latin-1), is refused at the gate.
        for raw in ("zoë".encode(), "josé".encode("latin-1"), b"jose"):
            refused = _post(server.endpoint, {"X-Memstore-User": raw})
            assert refused.status_code == 403, (raw, refused.text)
    finally:
        server.stop()
    async with MemoryStore.open(sqlite_url) as store:
        for user in ("josé", confusable, "李"):
            dump = await store.export(user_id=user)
            assert [r["input"] for r in dump["tables"]["episodes"]] == [f"I am {user}"], user
        for user in ("zoë", "jose"):
            assert (await store.export(user_id=user))["tables"]["episodes"] == []


@pytest.mark.sqlite
def test_http_stateless_server_answers_405_to_get_and_delete(http_server: HttpServer) -> None:
    # No server-to-client stream in stateless mode: GET must not open one that never
    # ends. Streamed, so the status is read as soon as the headers arrive and an
    # event stream (kept alive by pings) cannot hang the test.
    alice = {"X-Memstore-User": "alice", "Accept": "text/event-stream"}
    with httpx2.Client(timeout=30) as http:
        for method in ("GET", "DELETE"):
            with http.stream(method, http_server.endpoint, headers=alice) as answer:
                assert answer.status_code == 405, (method, answer.headers)
                assert answer.headers["allow"] == "POST"
                assert "POST only" in answer.read().decode()
        # The gate still answers first: no tenant, no information.
        assert http.get(http_server.endpoint).status_code == 401


# ---- the documentation page (docs/mcp.md) --------------------------------------------


def _readme_block(heading: str, lang: str) -> list[str]:
    from doc_blocks import code_blocks

    return code_blocks("docs/mcp.md", lang, heading)


@pytest.mark.sqlite
def test_readme_mcp_examples(sqlite_url: str, private_dir: Path) -> None:
    from memstore.cli import build_parser

    (commands,) = _readme_block("# MCP server", "bash")
    parser = build_parser()
    lines = [ln for ln in commands.splitlines() if ln.startswith("memstore mcp")]
    assert len(lines) == 3
    for line in lines:
        args = parser.parse_args([a.strip('"') for a in line.split("#")[0].split()[1:]])
        assert args.command == "mcp"

    stdio_example, http_example, listen_example = _readme_block("# MCP server", "python")

    def run(code: str) -> str:
        script = private_dir / "readme_mcp.py"
        script.write_text(code)
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env=_server_env({"MEMSTORE_URL": sqlite_url}),
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = run(stdio_example)
    assert TOOLS == json.loads(out.splitlines()[0].replace("'", '"'))
    assert "My cat is called Miso" in out

    async def seed() -> None:
        async with MemoryStore.open(sqlite_url) as store:
            await store.update_block("persona", "Alice likes short answers.", user_id="alice")

    asyncio.run(seed())
    # The page's HTTP command (allow-list alice, bob) on a free port instead of 8765.
    server = HttpServer(sqlite_url, private_dir, "--allow-user", "alice", "--allow-user", "bob")
    try:
        assert "8765" in http_example
        out = run(http_example.replace("8765", str(server.port)))
    finally:
        server.stop()
    assert out.splitlines() == ["memstore://blocks/persona Alice likes short answers."]
    out = run(listen_example)  # the subscriptions section: told of the block's change
    assert out.splitlines() == ["memstore://blocks/persona Alice prefers French."]


def test_loopback_hosts() -> None:
    from memstore.mcp.gate import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.com", ""))
