"""The OpenTelemetry SDK as an application installs it, with its own in-memory exporters.

``installed()`` sets a fresh tracer and meter provider as the process's global ones for
the block and puts the API's defaults back after it, so that tests before and after
run with no SDK (memstore's instrumentation off), as an application without one does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

__all__ = ["Captured", "installed", "metric_points"]


@dataclass
class Captured:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (found,) = self.named(name)
        return found


def _reset_globals() -> None:
    # The API sets each global provider once per process; its own test utilities
    # reset them the same way (opentelemetry.test.globals_test).
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # noqa: SLF001
    trace._TRACER_PROVIDER = None  # noqa: SLF001
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()  # noqa: SLF001
    metrics_internal._METER_PROVIDER = None  # noqa: SLF001


@contextmanager
def installed(
    *readers: MetricReader, exporter: SpanExporter | None = None, resource: Resource | None = None
) -> Iterator[Captured]:
    """The SDK with in-memory exporters (and ``readers``, e.g. a Prometheus one, and a span
    ``exporter``, e.g. OTLP's, too)."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource or Resource.create())
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    if exporter is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader, *readers])
    _reset_globals()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    try:
        yield Captured(spans, reader, tracer_provider, meter_provider)
    finally:
        _reset_globals()
        tracer_provider.shutdown()
        meter_provider.shutdown()


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Every data point read now, by instrument name."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found
