"""OpenTelemetry traces and metrics of memstore, free while no SDK listens.

memstore depends on nothing of OpenTelemetry and imports none of it: it records
through the API an application's SDK set up (``pip install memstore[otel]`` brings
the API; the SDK and exporters are the application's choice). See
docs/operations.md for the spans, attributes and instruments.
"""

from __future__ import annotations

from memstore.telemetry.facade import configure, traced_operations
from memstore.telemetry.models import input_tokens, model_call, retried
from memstore.telemetry.names import METRICS
from memstore.telemetry.runtime import (
    acquire_permit,
    backlog,
    consolidated,
    delivered,
    metrics_on,
    release_permit,
    waiter_added,
    woken,
)
from memstore.telemetry.spans import event, set_attributes, span
from memstore.telemetry.statements import statement_observed, statement_start

__all__ = [
    "METRICS",
    "acquire_permit",
    "backlog",
    "configure",
    "consolidated",
    "delivered",
    "event",
    "input_tokens",
    "metrics_on",
    "model_call",
    "release_permit",
    "retried",
    "set_attributes",
    "span",
    "statement_observed",
    "statement_start",
    "traced_operations",
    "waiter_added",
    "woken",
]
