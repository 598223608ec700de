"""Statement spans and counts: one function for every place a statement is observed.

:func:`statement_observed` takes what any observer knows after a statement ran (its
SQL text, the backend, start and end on the ``time.perf_counter_ns`` clock, the error
if it failed) and, while an SDK listens, makes a ``db.client`` span with explicit
times under the current span and counts it. The SQL text is read for its first
keyword only (``db.operation.name``): neither text nor parameters are exported, they
hold users' data. :mod:`memstore.telemetry.engine_events` feeds it from SQLAlchemy's
engine events; a driver-level path that bypasses them calls it directly.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from typing import Any

from memstore.telemetry._state import otel_module, tracer
from memstore.telemetry.instruments import instruments
from memstore.telemetry.names import (
    DB_OPERATION,
    DB_SYSTEM,
    DB_SYSTEM_NAME,
    ERROR_TYPE,
    db_system,
    error_type,
)
from memstore.telemetry.spans import mark_error, with_operation

__all__ = ["operation_name", "statement_observed", "statement_start"]

_KEYWORDS = frozenset(
    {
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "WITH",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "PRAGMA",
        "SET",
        "NOTIFY",
        "LISTEN",
        "UNLISTEN",
        "CREATE",
        "DROP",
        "ALTER",
        "ANALYZE",
        "VACUUM",
        "COPY",
        "SHOW",
    }
)


# The operations a WITH query's parts can be: the semantic conventions name a
# statement by the first operation found in it, and a CTE's is its first part's.
_FIRST_OPERATION = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


@lru_cache(maxsize=1024)
def operation_name(sql: str) -> str:
    """The statement's first operation if it is a known one, else ``OTHER``: nothing of a
    statement's text but a fixed vocabulary reaches a trace."""
    word = sql.lstrip(" \t\r\n(").split(None, 1)[0].upper() if sql.strip() else ""
    if word == "WITH":
        found = _FIRST_OPERATION.search(sql)
        return found.group(1).upper() if found else word
    return word if word in _KEYWORDS else "OTHER"


def statement_start() -> int | None:
    """The start to hand :func:`statement_observed` later; None (skip it) when off."""
    if tracer() is None and instruments() is None:
        return None
    return time.perf_counter_ns()


def statement_observed(
    sql: str,
    *,
    backend: str,
    start_ns: int,
    end_ns: int | None = None,
    error: BaseException | None = None,
    rows: int | None = None,
) -> None:
    """A statement ran from ``start_ns`` to ``end_ns`` (default now), perf_counter_ns."""
    end_ns = time.perf_counter_ns() if end_ns is None else end_ns
    operation = operation_name(sql)
    system = db_system(backend)
    metrics = instruments()
    if metrics is not None:
        counted: dict[str, Any] = {DB_SYSTEM_NAME: system, DB_OPERATION: operation}
        if error is not None:
            counted[ERROR_TYPE] = error_type(error)
        counted = with_operation(counted)
        metrics.add("memstore.db.statements", 1, counted)
        metrics.record("db.client.operation.duration", (end_ns - start_ns) / 1e9, counted)
    made = tracer()
    if made is None:
        return
    trace = otel_module("opentelemetry.trace")
    if not trace.get_current_span().is_recording():
        # Outside any traced work (migrations at open, the access buffer's background
        # flush): counted above, but a root span per statement would only be noise.
        return
    # Span times are wall-clock ns; the observer measured on perf_counter.
    offset = time.time_ns() - time.perf_counter_ns()
    attributes: dict[str, Any] = {
        DB_SYSTEM: system,
        DB_SYSTEM_NAME: system,
        DB_OPERATION: operation,
    }
    if rows is not None and rows >= 0:
        attributes["db.response.returned_rows"] = rows
    current = made.start_span(
        operation,
        kind=trace.SpanKind.CLIENT,
        attributes=attributes,
        start_time=start_ns + offset,
    )
    if error is not None:
        mark_error(current, error)
    current.end(end_time=end_ns + offset)
