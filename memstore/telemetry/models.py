"""Spans and counts of model calls: query and document embedding (GenAI conventions),
reranking, and the attempts an endpoint retried."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

from memstore.telemetry._state import tracer
from memstore.telemetry.instruments import instruments
from memstore.telemetry.names import (
    ERROR_TYPE,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_MODEL,
    GEN_AI_OPERATION,
    GEN_AI_TOKEN_TYPE,
    error_type,
)
from memstore.telemetry.spans import event, traced_span, with_operation

__all__ = ["input_tokens", "model_call", "model_name", "retried"]

_OFF: AbstractContextManager[None] = nullcontext()


class _Usage:
    """What the endpoint of the call in progress said it used (None: it did not say)."""

    __slots__ = ("tokens",)

    def __init__(self) -> None:
        self.tokens: int | None = None


# The model call this task is inside, while telemetry is on.
_CALL: ContextVar[_Usage | None] = ContextVar("memstore_model_call", default=None)


def input_tokens(count: int) -> None:
    """The endpoint of the current call reported ``count`` input tokens (a client that
    reads its answer's usage calls this; nothing happens outside a recorded call)."""
    usage = _CALL.get()
    if usage is not None:
        usage.tokens = count


def model_name(model: object) -> str:
    """What a trace calls a model: its ``model`` attribute if it names one, else its
    class (never its identity or URL, which may carry a host or a key's hint)."""
    name = getattr(model, "model", None) or getattr(model, "model_name", None)
    if isinstance(name, str) and name and len(name) <= 200 and "://" not in name:
        return name
    return type(model).__qualname__


def model_call(kind: str, model: object, inputs: int) -> AbstractContextManager[None]:
    """A span and counts for one call: ``kind`` is ``embeddings`` or ``rerank``."""
    if tracer() is None and instruments() is None:
        return _OFF
    return _call(kind, model_name(model), inputs)


@contextmanager
def _call(kind: str, name: str, inputs: int) -> Iterator[None]:
    attributes: dict[str, Any] = {GEN_AI_OPERATION: kind, GEN_AI_MODEL: name}
    started = time.perf_counter()
    error: BaseException | None = None
    made = tracer()
    usage = _Usage()
    token = _CALL.set(usage)
    try:
        if made is None:
            yield
        else:
            spanned = {**attributes, "memstore.model.inputs": inputs}
            with traced_span(made, f"{kind} {name}", spanned, client=True) as current:
                yield
                if usage.tokens is not None:
                    current.set_attribute(GEN_AI_INPUT_TOKENS, usage.tokens)
    except BaseException as exc:
        error = exc
        raise
    finally:
        _CALL.reset(token)
        metrics = instruments()
        if metrics is not None:
            counted = dict(attributes)
            if error is not None:
                counted[ERROR_TYPE] = error_type(error)
            counted = with_operation(counted)
            metrics.add("memstore.model.calls", 1, counted)
            elapsed = time.perf_counter() - started
            metrics.record("gen_ai.client.operation.duration", elapsed, counted)
            if usage.tokens is not None:
                tokens = {**counted, GEN_AI_TOKEN_TYPE: "input"}
                metrics.record("gen_ai.client.token.usage", usage.tokens, tokens)


def retried(kind: str, model: object, attempt: int, failure: BaseException) -> None:
    """Attempt ``attempt`` (1-based) of the current call failed and will be retried."""
    event("memstore.retry", {"memstore.attempt": attempt, ERROR_TYPE: error_type(failure)})
    metrics = instruments()
    if metrics is not None:
        metrics.add(
            "memstore.model.retries",
            1,
            with_operation({GEN_AI_OPERATION: kind, GEN_AI_MODEL: model_name(model)}),
        )
