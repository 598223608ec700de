"""Whether an OpenTelemetry SDK is listening, resolved once per call and never imported.

memstore does not import ``opentelemetry``: an application that configured an SDK
has imported ``opentelemetry.trace`` (``set_tracer_provider`` lives there), so the
modules are looked up in ``sys.modules``. Absent, or with the API's own proxy /
no-op provider still in place, :func:`tracer` and :func:`meter` return None and the
caller builds nothing. A provider installed later is picked up on the next call.

The check runs on every call (several times per statement), so it reads the API's
provider global rather than calling ``get_tracer_provider()`` (which looks up an
environment variable each time: about 1.5 µs); with an API that has no such global
it falls back to that call. A provider named only by ``OTEL_PYTHON_TRACER_PROVIDER``
is seen once something has asked the API for it (the SDK's setup and
``opentelemetry-instrument`` set it explicitly).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from memstore.version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter
    from opentelemetry.trace import Tracer

__all__ = ["SCOPE", "meter", "otel_module", "tracer"]

# The instrumentation scope every span and instrument of memstore carries.
SCOPE = "memstore"

# Provider classes of the API alone (nothing is recorded through them).
_SILENT = frozenset(
    {"ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider", "NoOpMeterProvider"}
)


class _Cached:
    """The provider last seen and what memstore made of it (None: silent)."""

    __slots__ = ("made", "provider")

    def __init__(self) -> None:
        self.provider: object = None
        self.made: Any = None


_TRACING = _Cached()
_UNKNOWN = object()
_METRICS = _Cached()


def otel_module(name: str) -> Any:
    """An already imported ``opentelemetry`` module (callers hold a tracer or meter)."""
    return sys.modules[name]


def tracer() -> Tracer | None:
    """memstore's tracer, or None when no SDK tracer provider is set."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    made: Tracer | None = _made(
        _TRACING, trace, "_TRACER_PROVIDER", trace.get_tracer_provider, "get_tracer"
    )
    return made


def meter() -> Meter | None:
    """memstore's meter, or None when no SDK meter provider is set."""
    metrics = sys.modules.get("opentelemetry.metrics")
    if metrics is None:
        return None
    internal = sys.modules.get("opentelemetry.metrics._internal")
    made: Meter | None = _made(
        _METRICS, internal, "_METER_PROVIDER", metrics.get_meter_provider, "get_meter"
    )
    return made


def _made(cache: _Cached, holder: Any, name: str, get: Any, make: str) -> Any:
    # The provider global of ``holder`` (None: none set, the API's proxy records
    # nothing); what memstore made of it is cached until the provider changes.
    provider: Any = getattr(holder, name, _UNKNOWN)
    if provider is None:
        return None
    if provider is _UNKNOWN:
        provider = get()
    if provider is not cache.provider:
        silent = type(provider).__name__ in _SILENT
        cache.made = None if silent else getattr(provider, make)(SCOPE, __version__)
        cache.provider = provider
    return cache.made
