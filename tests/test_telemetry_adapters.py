"""Where the adapters enter the library: the CLI's commands are root spans of their own;
the LangGraph store's operations are ``memstore.langgraph.*`` spans under the caller's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from otel_sdk import Captured, installed

from memstore import MemoryStore
from memstore.cli import main
from memstore.integrations.langgraph import MemstoreStore


@pytest.fixture
def otel() -> Iterator[Captured]:
    with installed() as captured:
        yield captured


def test_a_cli_command_is_the_root_of_its_trace(db_url: str, otel: Captured) -> None:
    assert main(["gc", "--url", db_url]) == 0
    command = otel.one("memstore.cli.gc")
    assert command.parent is None
    (gc,) = [s for s in otel.finished() if s.name.startswith("memstore.gc")]
    assert gc.parent is not None and gc.parent.span_id == command.context.span_id


def test_a_failed_cli_command_records_its_error_class(tmp_path: Path, otel: Captured) -> None:
    missing = tmp_path / "missing.db"
    assert main(["gc", "--url", f"sqlite:///{missing}"]) == 1
    command = otel.one("memstore.cli.gc")
    assert command.status.status_code == StatusCode.ERROR
    assert command.attributes is not None
    assert command.attributes["error.type"] == "NotFound"


async def test_langgraph_store_operations_are_spans(db_url: str, otel: Captured) -> None:
    async with MemoryStore.open(db_url) as store:
        graph = MemstoreStore(store, user_id="alice")
        with trace.get_tracer("app").start_as_current_span("graph.node") as node:
            await graph.aput(("memories",), "k1", {"text": "hello"})
            assert (await graph.aget(("memories",), "k1")) is not None
    node_id = node.get_span_context().span_id
    put = otel.one("memstore.langgraph.put")
    assert put.parent is not None and put.parent.span_id == node_id
    assert put.attributes is not None
    assert put.attributes["db.system.name"] in {"sqlite", "postgresql"}
    assert otel.named("memstore.langgraph.get")


async def test_an_agents_session_calls_are_thread_spans(db_url: str, otel: Captured) -> None:
    pytest.importorskip("agents", reason="needs the openai-agents extra")
    from memstore.integrations.openai_agents import MemstoreSession

    async with MemoryStore.open(db_url) as store:
        session = MemstoreSession("chat-1", store, user_id="alice")
        with trace.get_tracer("app").start_as_current_span("agent.run") as run:
            await session.add_items([{"role": "user", "content": "hello"}])
            assert len(await session.get_items()) == 1
    run_id = run.get_span_context().span_id
    for name in ("memstore.threads.append", "memstore.threads.get_thread"):
        (span,) = otel.named(name)
        assert span.parent is not None and span.parent.span_id == run_id, name
