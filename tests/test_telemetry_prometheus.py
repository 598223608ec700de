"""The metrics as an operator sees them: the Prometheus exporter scraped by a real Prometheus
server (Debian's), on both backends, and every query of the Grafana dashboard
(docs/grafana/memstore-dashboard.json) answered by that server."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_http import HostileServer, hostile_server
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from otel_sdk import Captured, installed
from prometheus_client import CollectorRegistry, start_wsgi_server
from prometheus_server import PROMETHEUS, prometheus_server

from memstore import MemoryStore
from memstore.embeddings import OpenAIEmbedder
from memstore.errors import MemstoreError
from memstore.rerankers import HTTPReranker
from memstore.telemetry import METRICS
from memstore.types import Episode

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "docs" / "grafana" / "memstore-dashboard.json"
KEY_ENV = "MEMSTORE_TEST_PROM_RERANK_KEY"
# The vector width the test databases are migrated with.
DATABASE_WIDTH = 384
# PromQL's own words in the dashboard's queries (functions, aggregations, keywords).
PROMQL_WORDS = {"sum", "max", "rate", "histogram_quantile", "by", "le"}


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def metric_names(query: str) -> set[str]:
    """The metric names a query reads: what is left without label matchers, ranges,
    grouping labels, numbers and PromQL's words."""
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\bby \([^)]*\)", " ", query)
    return {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", bare) if w not in PROMQL_WORDS}


def prometheus_names() -> dict[str, str]:
    """Each instrument's series names as the OpenTelemetry Prometheus exporter writes them."""
    names: dict[str, str] = {}
    for name, (kind, unit, _) in METRICS.items():
        base = name.replace(".", "_") + ("_seconds" if unit == "s" else "")
        if kind == "histogram":
            for suffix in ("_bucket", "_count", "_sum"):
                names[base + suffix] = name
        elif kind == "counter":
            names[base + "_total"] = name
        else:
            names[base] = name
    return names


def test_the_dashboard_reads_every_instrument_and_only_those() -> None:
    known = prometheus_names()
    used = set().union(*(metric_names(q) for q in dashboard_queries()))
    assert used, "no metric found in the dashboard"
    assert sorted(used - set(known)) == []
    assert sorted(set(METRICS) - {known[name] for name in used}) == []


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with hostile_server() as server:
        yield server


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[tuple[Captured, str]]:
    if not Path(PROMETHEUS).exists():
        pytest.fail(f"no Prometheus at {PROMETHEUS}: apt-get install prometheus (.ci/run does)")
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry)
    httpd, thread = start_wsgi_server(0, addr="127.0.0.1", registry=registry)
    try:
        with installed(reader) as otel:
            yield otel, f"127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


async def _workload(db_url: str, hostile: HostileServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Something for every panel: operations and an error, statements, a wait for a
    connection, embedder and reranker calls with a retry and a failure, consolidation,
    a waiter woken."""
    monkeypatch.setenv(KEY_ENV, "sk-prometheus-test-key-000")
    reranker = HTTPReranker("tiny", base_url=hostile.url, api_key_env=KEY_ENV, backoff=0.01)
    options = {"pool_size": 1, "max_overflow": 0}
    # Embeddings from an endpoint of their own that stays good and reports its tokens.
    with hostile_server() as embeddings:
        embeddings.width = DATABASE_WIDTH
        embedder = OpenAIEmbedder(
            "m",
            base_url=embeddings.url + "/v1",
            api_key="sk-prometheus-embed-000",
            dimensions=DATABASE_WIDTH,
        )
        async with MemoryStore.open(
            db_url, embedder=embedder, reranker=reranker, engine_options=options
        ) as store:
            await _calls(store, hostile)
    await reranker.aclose()


async def _calls(store: MemoryStore, hostile: HostileServer) -> None:
    """The workload itself: the reranker's endpoint (``hostile``) retries, then refuses."""
    for n in range(3):
        await store.remember(Episode(user_id="alice", session_id="s", input=f"zebra {n}"))
    hostile.requests = 0
    hostile.mode = "retry-after:0"
    await asyncio.gather(*(store.recall("zebra", user_id="alice") for _ in range(4)))
    hostile.mode = "echo-401"
    with pytest.raises(MemstoreError):
        await store.recall("zebra", user_id="alice")
    await store.consolidate_all_tenants(limit=1)
    waiting = asyncio.create_task(store.threads.wait("t", timeout=60, user_id="alice"))
    await asyncio.sleep(0.2)
    await store.threads.append("t", {"n": 1}, from_id="a", to_id="b", user_id="alice")
    await waiting


async def test_prometheus_scrapes_what_the_dashboard_queries(
    db_url: str,
    scraped: tuple[Captured, str],
    hostile: HostileServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    _, target = scraped
    await _workload(db_url, hostile, monkeypatch)
    system = "sqlite" if backend == "sqlite" else "postgresql"
    with prometheus_server(tmp_path, target) as prometheus:
        recall = prometheus.wait_for(
            'memstore_operation_duration_seconds_count{memstore_operation="memstore.recall"}'
        )
        assert {r["metric"]["db_system_name"] for r in recall} == {system}
        assert sum(float(r["value"][1]) for r in recall) == 5
        for query in dashboard_queries():
            assert prometheus.wait_for(query), query
