"""Latency samples, percentiles and the result rows the report is built from."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Row", "Samples", "Section", "ms", "ratio", "timed_async"]


class Samples:
    """Wall-clock durations in seconds."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def add(self, seconds: float) -> None:
        self.values.append(seconds)

    def pct(self, q: float) -> float:
        return float(np.percentile(self.values, q)) if self.values else float("nan")

    @property
    def p50(self) -> float:
        return self.pct(50)

    @property
    def total(self) -> float:
        return float(sum(self.values))

    def __len__(self) -> int:
        return len(self.values)


async def timed_async(samples: Samples, fn: Callable[[], Awaitable[Any]]) -> Any:
    start = time.perf_counter()
    result = await fn()
    samples.add(time.perf_counter() - start)
    return result


@dataclass
class Row:
    """One line of a result table; ``cells`` keyed by column name."""

    cells: dict[str, Any]


@dataclass
class Section:
    """One scenario's output: tables, target verdicts, notes and its duration."""

    title: str
    columns: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    targets: list[tuple[str, str, bool | str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, **cells: Any) -> None:
        for key in cells:
            if key not in self.columns:
                self.columns.append(key)
        self.rows.append(Row(cells))

    def target(self, name: str, measured: str, met: bool | str | None) -> None:
        """``met=None``: reported without a numeric target; a string: a verdict as is."""
        if met is not None and not isinstance(met, str):
            met = bool(met)  # numpy booleans would not survive the JSON record
        self.targets.append((name, measured, met))

    def note(self, text: str) -> None:
        self.notes.append(text)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "n/a"
