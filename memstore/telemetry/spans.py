"""Spans under the caller's current span, built only while an SDK is listening.

Off (:func:`~memstore.telemetry._state.tracer` is None) every helper returns a shared
no-op context manager: no span object, no attribute dict, no context switch.
An error ends a span with status ERROR, ``error.type`` its class name and an
``exception`` event naming only the class: an exception's message may quote the
caller's input (episode text, a fact's value), so it is never exported.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from memstore.telemetry._state import otel_module, tracer
from memstore.telemetry.instruments import instruments
from memstore.telemetry.names import ERROR_TYPE, OPERATION, error_type

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "current_operation",
    "event",
    "mark_error",
    "measured",
    "set_attributes",
    "span",
    "traced_span",
    "with_operation",
]

_OFF: AbstractContextManager[None] = nullcontext()

# The public operation (``memstore.recall``...) the current task is inside, for the
# statements and model calls it makes: their metrics are counted per operation.
_OPERATION: ContextVar[str | None] = ContextVar("memstore_operation", default=None)


def current_operation() -> str | None:
    return _OPERATION.get()


def span(
    name: str, attributes: Mapping[str, Any] | None = None, *, client: bool = False
) -> AbstractContextManager[Span | None]:
    """A child span of the current one for the block (nothing when tracing is off)."""
    made = tracer()
    if made is None:
        return _OFF
    return traced_span(made, name, attributes, client=client)


@contextmanager
def traced_span(
    made: Tracer,
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    client: bool = False,
    operation: str | None = None,
) -> Iterator[Span]:
    """:func:`span` with the tracer in hand; ``operation`` names a public operation."""
    trace = otel_module("opentelemetry.trace")
    kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
    token = _OPERATION.set(operation) if operation is not None else None
    try:
        with made.start_as_current_span(
            name,
            kind=kind,
            attributes=dict(attributes or {}),
            record_exception=False,
            set_status_on_exception=False,
        ) as current:
            try:
                yield current
            except BaseException as exc:
                mark_error(current, exc)
                raise
    finally:
        if token is not None:
            _OPERATION.reset(token)


def mark_error(current: Span, exc: BaseException) -> None:
    """Record ``exc`` on ``current`` by its class only (see the module's docstring)."""
    trace = otel_module("opentelemetry.trace")
    kind = error_type(exc)
    current.set_attribute(ERROR_TYPE, kind)
    current.add_event("exception", {"exception.type": kind})
    current.set_status(trace.Status(trace.StatusCode.ERROR, kind))


def set_attributes(attributes: Mapping[str, Any]) -> None:
    """Add attributes to the current span, if one is recording."""
    if tracer() is None:
        return
    current = otel_module("opentelemetry.trace").get_current_span()
    if current.is_recording():
        current.set_attributes(dict(attributes))


def event(name: str, attributes: Mapping[str, Any] | None = None) -> None:
    """An event on the current span, if one is recording."""
    if tracer() is None:
        return
    current = otel_module("opentelemetry.trace").get_current_span()
    if current.is_recording():
        current.add_event(name, dict(attributes or {}))


def measured(name: str, started: float, attributes: dict[str, Any]) -> None:
    """Record ``time.perf_counter() - started`` seconds on histogram ``name``."""
    made = instruments()
    if made is not None:
        made.record(name, time.perf_counter() - started, with_operation(attributes))


def with_operation(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` and the public operation they happen in, if any."""
    operation = _OPERATION.get()
    return attributes if operation is None else {OPERATION: operation, **attributes}
