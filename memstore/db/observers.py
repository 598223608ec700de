"""The one place that sees the statements memstore runs on the driver, past SQLAlchemy.

SQLAlchemy's engine events see every statement that goes through it; the hot path
(:mod:`memstore.db.prepared`) sends its statements to the driver directly, so
whatever must see every statement (the slow-statement log, the test suite's tenant
audit, benchmark statement logs) also registers here. Observers run in the task
that runs the statement: they must be quick and must not raise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.sql.compiler import Compiled

__all__ = ["Executed", "Observer", "observe", "observers"]


@dataclass(frozen=True, slots=True)
class Executed:
    """One statement the hot path sent: before it runs (``elapsed`` None), then after."""

    sql: str  # the text the driver ran
    parameters: tuple[Any, ...]  # the values as the driver received them, in order
    dialect: str  # "postgresql" or "sqlite"
    engine: Engine  # the SQLAlchemy engine whose pooled connection ran it
    cross_tenant: str | None  # the registered cross-tenant operation it runs for
    compiled: Compiled  # the compiled statement (parameter names: ``positiontup``)
    elapsed: float | None = None  # seconds, in the call after the statement
    failed: bool = False  # the statement raised (``elapsed`` is still given)


Observer = Callable[[Executed], None]

# (before, after) pairs; a tuple, replaced whole, so a statement running while an
# observer is added or removed iterates a consistent list.
_OBSERVERS: tuple[tuple[Observer | None, Observer | None], ...] = ()


def observers() -> tuple[tuple[Observer | None, Observer | None], ...]:
    """The registered (before, after) pairs; empty costs the hot path nothing."""
    return _OBSERVERS


def observe(*, before: Observer | None = None, after: Observer | None = None) -> Callable[[], None]:
    """Call ``before`` / ``after`` for every hot-path statement; returns the remover."""
    global _OBSERVERS
    pair = (before, after)
    _OBSERVERS = (*_OBSERVERS, pair)

    def remove() -> None:
        global _OBSERVERS
        _OBSERVERS = tuple(p for p in _OBSERVERS if p is not pair)

    return remove
