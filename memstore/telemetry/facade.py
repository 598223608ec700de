"""Spans for public operations: a class decorator for the facade and the thread buffer.

Each public coroutine method becomes a span ``memstore.<name>`` (``memstore.threads.<name>``
for the thread buffer) under the caller's current span, with the backend, the rows a
list result holds, the error class, and the tenant hashed when the store's
``trace_tenant`` is on; and a sample of ``memstore.operation.duration``. Off, the method
pays one call of :func:`~memstore.telemetry._state.tracer`.

Async generators (``export_stream``, ``changes()``...) and plain methods stay as
they are: a live feed's span would last as long as the feed.
"""

from __future__ import annotations

import functools
import inspect
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from memstore.telemetry._state import tracer
from memstore.telemetry.instruments import instruments
from memstore.telemetry.names import (
    DB_SYSTEM,
    DB_SYSTEM_NAME,
    ERROR_TYPE,
    OPERATION,
    TENANT_HASH,
    db_system,
    error_type,
    tenant_hash,
)
from memstore.telemetry.spans import traced_span

__all__ = ["configure", "traced_operations"]

C = TypeVar("C", bound=type)

# Per instance: (backend name, whether the tenant is traced, hashed). Set by its owner.
_SETTINGS: weakref.WeakKeyDictionary[object, tuple[str, bool]] = weakref.WeakKeyDictionary()


def configure(owner: object, *, backend: str, trace_tenant: bool) -> None:
    """What the spans of ``owner``'s operations say about it."""
    _SETTINGS[owner] = (backend, trace_tenant)


def traced_operations(prefix: str) -> Callable[[C], C]:
    """Class decorator: every public coroutine method is a ``{prefix}.{name}`` span."""

    def decorate(cls: C) -> C:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not inspect.iscoroutinefunction(member):
                continue
            setattr(cls, name, _traced(member, f"{prefix}.{name}"))
        return cls

    return decorate


def _traced(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    where = _tenant_position(method)

    async def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        made = tracer()
        if made is None and instruments() is None:
            return await method(self, *args, **kwargs)
        backend, with_tenant = _SETTINGS.get(self, ("", False))
        attributes: dict[str, Any] = {OPERATION: name}
        if backend:
            attributes[DB_SYSTEM_NAME] = attributes[DB_SYSTEM] = db_system(backend)
        if with_tenant:
            user_id = _tenant_of(where, args, kwargs)
            if isinstance(user_id, str):
                attributes[TENANT_HASH] = tenant_hash(user_id)
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            if made is None:
                return await method(self, *args, **kwargs)
            with traced_span(made, name, attributes, operation=name) as current:
                result = await method(self, *args, **kwargs)
                if isinstance(result, list | tuple):
                    current.set_attribute("memstore.rows_returned", len(result))
                return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            _measure(name, backend, started, error)

    functools.update_wrapper(call, method)
    # What readers and generators unwrap to stays the forwarded service method: this
    # layer adds no signature of its own.
    call.__wrapped__ = getattr(method, "__wrapped__", method)  # type: ignore[attr-defined]
    return call


def _measure(name: str, backend: str, started: float, error: BaseException | None) -> None:
    made = instruments()
    if made is None:
        return
    attributes: dict[str, Any] = {OPERATION: name}
    if backend:
        attributes[DB_SYSTEM_NAME] = db_system(backend)
    if error is not None:
        attributes[ERROR_TYPE] = error_type(error)
    made.record("memstore.operation.duration", time.perf_counter() - started, attributes)


def _tenant_position(method: Callable[..., Any]) -> int | None:
    """Where ``user_id`` is among the positional arguments after ``self`` (None: nowhere)."""
    try:
        parameters = list(inspect.signature(method).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    for index, parameter in enumerate(parameters):
        if parameter.name in ("user_id", "user") and parameter.kind in (
            parameter.POSITIONAL_ONLY,
            parameter.POSITIONAL_OR_KEYWORD,
        ):
            return index
    return None


def _tenant_of(where: int | None, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> object:
    for name in ("user_id", "user"):
        if name in kwargs:
            return kwargs[name]
    if where is not None and where < len(args):
        return args[where]
    # remember(episode), assert_fact(fact): the tenant is the record's.
    return getattr(args[0], "user_id", None) if args else None
