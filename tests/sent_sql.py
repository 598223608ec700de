"""Every statement the process's engines send, by whichever path memstore took.

SQLAlchemy's cursor events see what runs through SQLAlchemy; the per-call reads
that memstore sends to the driver directly (memstore.db.prepared) reach its
observers (memstore.db.observers) instead. Tests that list statements need both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from memstore.db.observers import Executed, observe

__all__ = ["every_statement"]


@contextmanager
def every_statement(record: Callable[[str, Any], None]) -> Iterator[None]:
    """Call ``record(sql, parameters)`` for each statement sent meanwhile, before it runs."""

    def through_sqlalchemy(
        _conn: Any, _cursor: Any, sql: str, params: Any, _context: Any, many: bool
    ) -> None:
        if many and isinstance(params, list | tuple) and params:
            params = params[0]
        record(sql, params)

    def on_driver(executed: Executed) -> None:
        record(executed.sql, executed.parameters)

    event.listen(Engine, "before_cursor_execute", through_sqlalchemy)
    unobserve = observe(before=on_driver)
    try:
        yield
    finally:
        unobserve()
        event.remove(Engine, "before_cursor_execute", through_sqlalchemy)
