"""Slow-statement log: a WARNING on ``memstore.db.slowlog`` for each statement over a threshold.

Off unless a threshold is given: ``create_engine(..., slow_query_ms=N)`` (also through
``MemoryStore.open(engine_options=...)``) or the ``MEMSTORE_SLOW_QUERY_MS`` environment
variable. Only the SQL text is logged, never the bound parameters: they hold users' data.
"""

from __future__ import annotations

import logging
import math
import os
import time
import weakref
from collections.abc import Mapping
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore.core.validation import is_number
from memstore.db.observers import Executed, observe
from memstore.dialects import dialect_for
from memstore.errors import InvalidInput

__all__ = [
    "ENV_VAR",
    "MAX_LOGGED_SQL_CHARS",
    "check_threshold",
    "install_slow_query_log",
    "slow_query_ms_from_env",
]

logger = logging.getLogger(__name__)

ENV_VAR = "MEMSTORE_SLOW_QUERY_MS"
MAX_LOGGED_SQL_CHARS = 500
_STARTS = "memstore_statement_starts"


def slow_query_ms_from_env(env: Mapping[str, str] | None = None) -> float | None:
    """The threshold in ``$MEMSTORE_SLOW_QUERY_MS``; None (off) when unset or empty."""
    raw = (os.environ if env is None else env).get(ENV_VAR, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise InvalidInput(
            f"{ENV_VAR} must be a number of milliseconds >= 0 (or unset to turn the "
            f"slow-statement log off), got {raw!r}"
        )
    return value


def check_threshold(threshold_ms: object) -> float:
    """``threshold_ms`` as a float, or :class:`InvalidInput` if it is not a number >= 0."""
    if not is_number(threshold_ms) or threshold_ms < 0:
        raise InvalidInput(
            f"slow_query_ms must be a number of milliseconds >= 0, got {threshold_ms!r}"
        )
    return float(threshold_ms)


def install_slow_query_log(engine: AsyncEngine, threshold_ms: float) -> None:
    """Log every statement of ``engine`` that takes at least ``threshold_ms`` milliseconds."""
    threshold_ms = check_threshold(threshold_ms)
    threshold = threshold_ms / 1000.0

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def before(
        conn: Any, _cursor: Any, _statement: str, _params: Any, _context: Any, _executemany: bool
    ) -> None:
        # A stack, not one slot: a statement may run while another is pending
        # on the same connection (e.g. inside an event of the first).
        conn.info.setdefault(_STARTS, []).append(time.perf_counter())

    @event.listens_for(engine.sync_engine, "after_cursor_execute")
    def after(
        conn: Any, _cursor: Any, statement: str, _params: Any, _context: Any, executemany: bool
    ) -> None:
        starts = conn.info.get(_STARTS)
        if not starts:
            return
        elapsed = time.perf_counter() - starts.pop()
        if elapsed >= threshold:
            _log(statement, elapsed, threshold_ms, dialect_for(engine).name, executemany)

    # The statements memstore sends to the driver directly, past the events above.
    pool = weakref.ref(engine.sync_engine.pool)

    def hot(executed: Executed) -> None:
        mine = pool()
        if mine is None:  # the engine is gone: so is its log
            unobserve()
            return
        if (
            executed.engine.pool is mine
            and executed.elapsed is not None
            and executed.elapsed >= threshold
        ):
            _log(executed.sql, executed.elapsed, threshold_ms, executed.dialect, False)

    unobserve = observe(after=hot)

    @event.listens_for(engine.sync_engine, "handle_error")
    def failed(context: Any) -> None:
        # A failed statement never reaches after_cursor_execute; drop its start.
        conn = context.connection
        if conn is not None and conn.info.get(_STARTS):
            conn.info[_STARTS].pop()


def _log(statement: str, elapsed: float, threshold_ms: float, dialect: str, many: bool) -> None:
    sql = " ".join(statement.split())
    if len(sql) > MAX_LOGGED_SQL_CHARS:
        sql = sql[:MAX_LOGGED_SQL_CHARS] + "…"
    logger.warning(
        "slow statement: %.1f ms (threshold %g ms, %s%s): %s",
        elapsed * 1000,
        threshold_ms,
        dialect,
        ", executemany" if many else "",
        sql,
    )
