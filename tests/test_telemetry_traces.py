"""Spans of memstore's operations, read from the OpenTelemetry SDK's in-memory exporter,
on both backends: the tree of one agent turn, the error class, the sync API's parent,
pool waits, the reranker's retries, and no user data in any attribute or event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hostile_http import HostileServer, hostile_server, key_parts
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from otel_sdk import Captured, installed, metric_points

from memstore import MemoryStore
from memstore.errors import InvalidInput, NotFound
from memstore.rerankers import HTTPReranker
from memstore.sync import SyncMemoryStore
from memstore.types import Episode, Fact

KEY = "sk-OTELk3yZq8Wm2Rv7Tn4Lp"
KEY_ENV = "MEMSTORE_TEST_OTEL_RERANK_KEY"
EPISODE_TEXT = "zebra-episode-text-7731"
QUERY = "zebra narwhal-query-4410"
FACT_VALUE = "quokka-fact-value-5521"
TENANT = "tenant-pangolin-9034"
PAYLOAD = "wombat-payload-1123"
THREAD = "thread-ibis-2291"
SECRETS = [EPISODE_TEXT, "narwhal-query-4410", FACT_VALUE, TENANT, PAYLOAD, THREAD, *key_parts(KEY)]


@pytest.fixture
def otel() -> Iterator[Captured]:
    with installed() as captured:
        yield captured


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with hostile_server() as server:
        yield server


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _descendants(spans: list[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    ids = {root.context.span_id}
    found: list[ReadableSpan] = []
    changed = True
    while changed:
        changed = False
        for span in spans:
            if span.context.span_id not in ids and _parent(span) in ids:
                ids.add(span.context.span_id)
                found.append(span)
                changed = True
    return found


async def _turn(store: MemoryStore, user_id: str = "alice") -> None:
    """One agent turn as docs/agent-loop.md runs it: context, (the LLM), remember, append."""
    await store.context(user_id=user_id, session_id="s1", query=QUERY)
    await store.remember(
        Episode(user_id=user_id, session_id="s1", input=EPISODE_TEXT, output="noted")
    )
    await store.recall(QUERY, user_id=user_id)
    await store.threads.append(
        THREAD, {"text": PAYLOAD}, from_id="agent", to_id="user", user_id=user_id
    )


async def test_one_turn_is_a_tree_under_the_callers_span(
    store: MemoryStore, otel: Captured, backend: str
) -> None:
    await store.remember(Episode(user_id="alice", session_id="s0", input="zebra before"))
    otel.spans.clear()
    with trace.get_tracer("app").start_as_current_span("agent.turn") as turn:
        await _turn(store)
    spans = otel.finished()
    turn_id = turn.get_span_context().span_id
    system = "postgresql" if backend != "sqlite" else "sqlite"
    for name in ("memstore.context", "memstore.remember", "memstore.recall"):
        op = otel.one(name)
        assert _parent(op) == turn_id, name
        assert op.attributes is not None
        assert op.attributes["db.system.name"] == system
        assert op.attributes["memstore.operation"] == name
        statements = [
            s for s in _descendants(spans, op) if "db.operation.name" in (s.attributes or {})
        ]
        assert statements, f"{name} ran no statement span"
        assert all(s.kind == trace.SpanKind.CLIENT for s in statements)
    append = otel.one("memstore.threads.append")
    assert _parent(append) == turn_id
    assert {s.attributes["db.operation.name"] for s in _descendants(spans, append)} >= {"INSERT"}

    context = otel.one("memstore.context")
    children = {s.name for s in spans if _parent(s) == context.context.span_id}
    assert {"memstore.context.gather", "memstore.context.pack"} <= children
    assert context.attributes["memstore.context.budget_tokens"] == 2000
    assert 0 < context.attributes["memstore.context.used_tokens"] <= 2000
    assert context.attributes["memstore.candidates"] >= 1

    recall = otel.one("memstore.recall")
    assert recall.attributes["memstore.rows_returned"] == 2
    (embedding,) = [s for s in _descendants(spans, recall) if s.name.startswith("embeddings ")]
    assert embedding.attributes["gen_ai.operation.name"] == "embeddings"
    assert embedding.attributes["gen_ai.request.model"] == "HashingEmbedder"
    assert embedding.kind == trace.SpanKind.CLIENT


async def test_reads_sent_to_the_driver_are_statement_spans(
    store: MemoryStore, otel: Captured, backend: str
) -> None:
    # store.facts and fact_history run on the driver connection, past SQLAlchemy's events.
    await store.add_fact(Fact(user_id="alice", subject="alice", predicate="city", object="x"))
    await store.facts(user_id="alice", subject="alice")
    await store.fact_history(user_id="alice", subject="alice", predicate="city")
    spans = otel.finished()
    for name in ("memstore.facts", "memstore.fact_history"):
        statements = [
            s for s in _descendants(spans, otel.one(name)) if s.kind == trace.SpanKind.CLIENT
        ]
        assert [s.attributes["db.operation.name"] for s in statements] == ["SELECT"], name
    points = metric_points(otel.metrics)["memstore.db.statements"]
    assert any(p.attributes.get("memstore.operation") == "memstore.facts" for p in points)


async def test_an_error_is_recorded_with_its_memstore_class(
    store: MemoryStore, otel: Captured
) -> None:
    with pytest.raises(InvalidInput):
        await store.recall("anything", user_id="alice", limit=0)
    span = otel.one("memstore.recall")
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "InvalidInput"
    assert span.attributes["error.type"] == "InvalidInput"
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("exception", {"exception.type": "InvalidInput"})
    ]
    durations = metric_points(otel.metrics)["memstore.operation.duration"]
    assert any(p.attributes.get("error.type") == "InvalidInput" for p in durations)


def test_the_sync_api_spans_under_the_calling_threads_span(db_url: str) -> None:
    with installed() as otel, SyncMemoryStore.open(db_url) as store:
        with trace.get_tracer("app").start_as_current_span("sync.caller") as caller:
            store.recall("anything", user_id="alice")
        assert _parent(otel.one("memstore.recall")) == caller.get_span_context().span_id


async def test_a_wait_for_a_connection_is_a_span(db_url: str, otel: Captured) -> None:
    async with MemoryStore.open(
        db_url, engine_options={"pool_size": 1, "max_overflow": 0}
    ) as store:
        await asyncio.gather(*(store.recall("q", user_id="alice") for _ in range(4)))
    waits = otel.named("memstore.pool.wait")
    assert waits
    recalls = {s.context.span_id for s in otel.named("memstore.recall")}
    assert {_parent(w) for w in waits} <= recalls
    points = metric_points(otel.metrics)
    assert "db.client.connection.pending_requests" in points
    used = points["db.client.connection.count"]
    assert [p.value for p in used] == [0]  # every permit taken was given back


async def test_a_wait_for_sqlites_write_lock_is_a_span(
    store: MemoryStore, otel: Captured, backend: str
) -> None:
    if backend != "sqlite":
        pytest.skip("Postgres writers take no process-wide write lock")
    episodes = [Episode(user_id="alice", session_id="s", input=f"n {n}") for n in range(4)]
    await asyncio.gather(*(store.remember(e) for e in episodes))
    waits = otel.named("memstore.write_lock.wait")
    assert waits
    remembers = {s.context.span_id for s in otel.named("memstore.remember")}
    assert {_parent(w) for w in waits} <= remembers


@pytest.fixture
async def reranked_store(
    db_url: str, hostile: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MemoryStore]:
    monkeypatch.setenv(KEY_ENV, KEY)
    reranker = HTTPReranker(
        "tiny-rerank", base_url=hostile.url, api_key_env=KEY_ENV, max_retries=2, backoff=0.01
    )
    async with MemoryStore.open(db_url, reranker=reranker, trace_tenant=True) as store:
        yield store
    await reranker.aclose()


async def test_the_rerank_call_and_its_retry(
    reranked_store: MemoryStore, hostile: HostileServer, otel: Captured
) -> None:
    await reranked_store.remember(Episode(user_id="alice", session_id="s", input="zebra one"))
    hostile.requests = 0
    hostile.mode = "retry-after:0"  # one 503, then a good answer
    otel.spans.clear()
    await reranked_store.recall("zebra", user_id="alice")
    recall = otel.one("memstore.recall")
    (rerank,) = [s for s in _descendants(otel.finished(), recall) if s.name.startswith("rerank")]
    assert rerank.attributes["gen_ai.request.model"] == "tiny-rerank"
    assert [e.name for e in rerank.events] == ["memstore.retry"]
    assert rerank.events[0].attributes["memstore.attempt"] == 1
    retries = metric_points(otel.metrics)["memstore.model.retries"]
    assert sum(p.value for p in retries) == 1
    assert hostile.requests == 2


def _exported_texts(otel: Captured) -> list[str]:
    texts: list[str] = []

    def add(attributes: Any) -> None:
        for key, value in dict(attributes or {}).items():
            texts.append(str(key))
            texts.extend(str(v) for v in (value if isinstance(value, tuple) else (value,)))

    for span in otel.finished():
        texts.append(span.name)
        texts.append(span.status.description or "")
        add(span.attributes)
        for event in span.events:
            texts.append(event.name)
            add(event.attributes)
    data = otel.metrics.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                texts.append(metric.name)
                for point in metric.data.data_points:
                    add(point.attributes)
    return texts


async def test_no_attribute_or_event_carries_user_data_or_a_key(
    reranked_store: MemoryStore, hostile: HostileServer, otel: Captured
) -> None:
    store = reranked_store
    hostile.mode = "retry-after:0"
    with trace.get_tracer("app").start_as_current_span("agent.turn"):
        await _turn(store, user_id=TENANT)
        await store.assert_fact(
            Fact(user_id=TENANT, subject="user", predicate="likes", object=FACT_VALUE)
        )
        await store.recall_facts(FACT_VALUE, user_id=TENANT)
        hostile.mode = "echo-401"  # the server quotes the key back into its error
        with pytest.raises(Exception):  # noqa: B017 - the class is the reranker's business
            await store.recall(QUERY, user_id=TENANT)
        with pytest.raises(InvalidInput):  # its message quotes the bad value
            await store.recall(QUERY, user_id=TENANT, limit=-1)
        with pytest.raises(NotFound):  # its message quotes the thread id
            await store.threads.get_slot(THREAD, 999, user_id=TENANT)
    texts = _exported_texts(otel)
    assert any(t.startswith("memstore.") for t in texts)  # the scan saw the export
    assert any(s.attributes.get("memstore.tenant.hash") for s in otel.finished())
    leaks = sorted({secret for secret in SECRETS for text in texts if secret in text})
    assert leaks == []


async def test_the_tenant_is_off_by_default(store: MemoryStore, otel: Captured) -> None:
    await store.recall("q", user_id="alice")
    assert "memstore.tenant.hash" not in (otel.one("memstore.recall").attributes or {})
