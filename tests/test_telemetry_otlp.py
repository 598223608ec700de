"""Spans sent with the OTLP exporter (protobuf over HTTP) to a real receiver, Arize Phoenix,
and read back from it, on both backends: the tree of one agent turn as the receiver
stored it, and no user data or key in anything it stored."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from otel_sdk import installed
from phoenix_server import PHOENIX_VENV, Phoenix, phoenix_server
from served import free_port, listening, stopped, wait_until_ready
from test_telemetry_traces import EPISODE_TEXT, SECRETS, _turn

from memstore import MemoryStore
from memstore.types import Episode

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not PHOENIX_VENV,
    reason="no OTLP receiver: set MEMSTORE_TEST_PHOENIX to a virtual environment with "
    "arize-phoenix (.ci/phoenix.txt; .ci/run makes one)",
)


@pytest.fixture(scope="module")
def phoenix() -> Iterator[Phoenix]:
    root = Path(tempfile.mkdtemp(prefix="memstore-phoenix-"))
    try:
        with phoenix_server(root) as server:
            yield server
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def _texts(spans: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                texts.append(str(key))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        else:
            texts.append(str(value))

    for span in spans:
        walk({k: span.get(k) for k in ("name", "attributes", "events", "status_message")})
    return texts


async def test_a_turn_reaches_the_receiver_as_a_tree(phoenix: Phoenix, db_url: str) -> None:
    project = f"memstore-{uuid.uuid4().hex[:12]}"
    resource = Resource.create(
        {"service.name": "memstore-test", "openinference.project.name": project}
    )
    exporter = OTLPSpanExporter(endpoint=phoenix.traces_endpoint, timeout=30)
    with installed(exporter=exporter, resource=resource):
        async with MemoryStore.open(db_url, trace_tenant=True) as store:
            await store.remember(Episode(user_id="alice", session_id="s0", input="zebra"))
            with trace.get_tracer("app").start_as_current_span("agent.turn"):
                await _turn(store)
    spans = phoenix.spans_of_trace(project, "agent.turn")
    (turn,) = [s for s in spans if s["name"] == "agent.turn"]
    turn_id = turn["context"]["span_id"]
    in_turn = [s for s in spans if s["context"]["trace_id"] == turn["context"]["trace_id"]]
    by_name = {s["name"]: s for s in in_turn}
    for name in ("memstore.context", "memstore.remember", "memstore.recall"):
        assert by_name[name]["parent_id"] == turn_id, name
    append = by_name["memstore.threads.append"]
    assert append["parent_id"] == turn_id
    inserts = [s for s in spans if s["parent_id"] == append["context"]["span_id"]]
    assert {s["attributes"].get("db.operation.name") for s in inserts} >= {"INSERT"}
    assert by_name["memstore.recall"]["attributes"]["db.system.name"] in {"sqlite", "postgresql"}
    texts = _texts(spans)
    assert "memstore.tenant.hash" in texts
    assert sorted({s for s in SECRETS for t in texts if s in t}) == []


# The MCP server as deployed: `memstore mcp --transport http` in its own process, with an
# SDK exporting to the receiver (what opentelemetry-instrument would set up).
_SERVER_PRELUDE = """
import sys
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
provider = TracerProvider(resource=Resource.create(
    {{"service.name": "memstore-mcp", "openinference.project.name": {project!r}}}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint={endpoint!r})))
trace.set_tracer_provider(provider)
from memstore.cli import main
try:
    raise SystemExit(main(sys.argv[1:]))
finally:
    provider.shutdown()
"""


@pytest.fixture
def traced_mcp(phoenix: Phoenix, db_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``memstore mcp --transport http`` exporting to the receiver: (endpoint, project)."""
    pytest.importorskip("mcp", reason="needs the mcp extra")
    project = f"memstore-mcp-{uuid.uuid4().hex[:12]}"
    prelude = _SERVER_PRELUDE.format(project=project, endpoint=phoenix.traces_endpoint)
    port = free_port()
    log = tmp_path / "mcp.log"
    args = ["mcp", "--transport", "http", "--url", db_url, "--port", str(port)]
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-c", prelude, *args, "--allow-user", "alice"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    with stopped(server):
        wait_until_ready(server, listening(port), what="the MCP server", log=log, seconds=120)
        yield f"http://127.0.0.1:{port}/mcp", project


async def test_the_mcp_http_servers_tool_calls_reach_the_receiver(
    phoenix: Phoenix, traced_mcp: tuple[str, str]
) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    endpoint, project = traced_mcp
    async with create_mcp_http_client(headers={"X-Memstore-User": "alice"}) as http:
        async with Client(streamable_http_client(endpoint, http_client=http)) as client:
            episode = {"input": EPISODE_TEXT, "output": "ok", "session_id": "s1"}
            stored = await client.call_tool("remember", episode)
            assert not stored.is_error, stored
            found = await client.call_tool("search_memory", {"query": "zebra"})
            assert not found.is_error, found
    spans = phoenix.spans_of_trace(project, "tools/call search_memory")
    ids = {s["context"]["span_id"]: s for s in spans}
    for tool, operation in (
        ("remember", "memstore.remember"),
        ("search_memory", "memstore.call_tool"),
    ):
        (call,) = [s for s in spans if s["name"] == f"tools/call {tool}"]
        ours = [s for s in spans if s["parent_id"] == call["context"]["span_id"]]
        assert [s["name"] for s in ours] == [operation], tool
    statements = [s for s in spans if "db.operation.name" in s["attributes"]]
    assert statements and all(s["parent_id"] in ids for s in statements)
    texts = _texts(spans)
    assert sorted({s for s in SECRETS for t in texts if s in t}) == []
