"""Spans sent with the OTLP exporter (protobuf over HTTP) to a real receiver, Arize Phoenix,
and read back from it, on both backends: the tree of one agent turn as the receiver
stored it, and no user data or key in anything it stored."""

from __future__ import annotations

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
from test_telemetry_traces import SECRETS, _turn

from memstore import MemoryStore
from memstore.types import Episode

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
