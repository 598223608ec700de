"""memstore's metrics, read with the OpenTelemetry SDK's InMemoryMetricReader on both
backends: per operation and backend, statements, model calls, waiters and wake-ups, and
the consolidation job's throughput and backlog."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from otel_sdk import Captured, installed, metric_points

from memstore import MemoryStore
from memstore.telemetry import METRICS
from memstore.types import Episode


@pytest.fixture
def otel() -> Iterator[Captured]:
    with installed() as captured:
        yield captured


def _where(points: list[Any], **attributes: Any) -> list[Any]:
    return [p for p in points if all(p.attributes.get(k) == v for k, v in attributes.items())]


def _system(backend: str) -> str:
    return "sqlite" if backend == "sqlite" else "postgresql"


async def test_operations_statements_and_model_calls(
    store: MemoryStore, otel: Captured, backend: str
) -> None:
    await store.remember(Episode(user_id="alice", session_id="s", input="zebra crossing"))
    for _ in range(3):
        await store.recall("zebra", user_id="alice")
    await store.facts(user_id="alice")
    await store.threads.append("t", {"x": 1}, from_id="a", to_id="b", user_id="alice")
    points = metric_points(otel.metrics)
    system = _system(backend)

    durations = points["memstore.operation.duration"]
    (recall,) = _where(durations, **{"memstore.operation": "memstore.recall"})
    assert recall.attributes["db.system.name"] == system
    assert recall.count == 3
    assert _where(durations, **{"memstore.operation": "memstore.threads.append"})
    assert _where(durations, **{"memstore.operation": "memstore.facts"})

    statements = _where(
        points["memstore.db.statements"], **{"memstore.operation": "memstore.recall"}
    )
    assert statements and all(p.attributes["db.system.name"] == system for p in statements)
    assert {p.attributes["db.operation.name"] for p in statements} & {"SELECT", "WITH"}
    per_call = sum(p.value for p in statements) / 3
    assert per_call >= 1
    assert _where(
        points["db.client.operation.duration"], **{"memstore.operation": "memstore.recall"}
    )

    calls = _where(points["memstore.model.calls"], **{"gen_ai.operation.name": "embeddings"})
    by_operation = {p.attributes.get("memstore.operation"): p.value for p in calls}
    assert by_operation["memstore.recall"] == 3
    assert by_operation["memstore.remember"] == 1


async def test_waiters_and_wake_ups(store: MemoryStore, otel: Captured) -> None:
    await store.threads.append("t", {"n": 0}, from_id="a", to_id="b", user_id="alice")
    waiting = asyncio.create_task(store.threads.wait("t", after=0, timeout=60, user_id="alice"))
    # Appended once the waiter is asleep, as the waiters gauge shows.
    while not any(p.value == 1 for p in _waiters(otel)):
        assert not waiting.done()
        await asyncio.sleep(0.01)
    await store.threads.append("t", {"n": 1}, from_id="a", to_id="b", user_id="alice")
    slots = await waiting
    assert [s.index for s in slots] == [1]
    points = metric_points(otel.metrics)
    assert sum(p.value for p in points["memstore.changes.wakeups"]) >= 1
    (lag,) = points["memstore.changes.lag"]
    assert lag.count == 1 and lag.sum >= 0
    assert [p.value for p in _waiters(otel)] == [0]
    waits = otel.named("memstore.changes.wait")
    assert [w.attributes["memstore.woken"] for w in waits][-1] is True


def _waiters(otel: Captured) -> list[Any]:
    return metric_points(otel.metrics).get("memstore.changes.waiters", [])


async def test_consolidation_throughput_and_backlog(store: MemoryStore, otel: Captured) -> None:
    for n in range(5):
        await store.remember(
            Episode(user_id=f"user{n % 2}", session_id="s", input=f"my name is Ann{n}")
        )
    result = await store.consolidate_all_tenants(limit=3, batch_size=1)
    assert result.processed == 3
    points = metric_points(otel.metrics)
    assert sum(p.value for p in points["memstore.consolidation.episodes"]) == 3
    assert [p.value for p in points["memstore.consolidation.backlog"]] == [2]
    run = otel.one("memstore.consolidation.run")
    assert run.attributes["memstore.consolidation.processed"] == 3
    assert len(otel.named("memstore.consolidation.batch")) == 3


def test_every_instrument_has_a_unit_and_a_description() -> None:
    for name, (kind, unit, description) in METRICS.items():
        assert kind in {"histogram", "counter", "updown", "gauge"}, name
        assert unit and description, name
