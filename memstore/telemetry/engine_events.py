"""Statement spans from SQLAlchemy's cursor events (imported by the engine factory only,
so that ``memstore.telemetry`` itself needs no SQLAlchemy)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.telemetry.statements import statement_observed, statement_start

__all__ = ["install_statement_spans"]

# The attribute an execution context carries its start under (perf_counter_ns).
_START = "_memstore_telemetry_start"
# Statements announced without an execution context (several sent to the driver in
# one call, announced before it and after it in reverse order): their starts stack
# on the connection.
_ANNOUNCED = "memstore_telemetry_announced"


def install_statement_spans(engine: AsyncEngine, backend: str) -> None:
    """Feed :func:`statement_observed` from ``engine``'s cursor events."""

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def before(
        conn: Any, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        start = statement_start()
        if context is not None:
            if start is not None:
                setattr(context, _START, start)
        else:
            conn.info.setdefault(_ANNOUNCED, []).append(start)

    @event.listens_for(engine.sync_engine, "after_cursor_execute")
    def after(
        conn: Any, cursor: Any, statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        if context is None:
            announced = conn.info.get(_ANNOUNCED)
            start = announced.pop() if announced else None
        else:
            start = getattr(context, _START, None)
            if start is not None:
                delattr(context, _START)
        if start is not None:
            rows = getattr(cursor, "rowcount", None)
            statement_observed(statement, backend=backend, start_ns=start, rows=rows)

    @event.listens_for(engine.sync_engine, "handle_error")
    def failed(context: Any) -> None:
        execution = context.execution_context
        start = getattr(execution, _START, None)
        if start is not None:
            delattr(execution, _START)
            statement_observed(
                context.statement or "",
                backend=backend,
                start_ns=start,
                error=context.original_exception,
            )
