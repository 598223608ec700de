"""Time memstore and its raw baseline on the same queries, interleaved.

Alternating which path goes first for each query spreads cache effects and the
noise of a shared machine evenly over both paths.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .stats import Samples, ms, ratio

__all__ = ["Paired", "run_paired"]

Fn = Callable[[Any], Awaitable[Any]]


class Paired:
    def __init__(self, names: Sequence[str]) -> None:
        self.samples = {n: Samples() for n in names}
        self.results: dict[str, list[Any]] = {n: [] for n in names}

    def cells(self, name: str, baseline: str) -> dict[str, str]:
        s, b = self.samples[name], self.samples[baseline]
        return {
            "p50 ms": ms(s.p50),
            "p95 ms": ms(s.pct(95)),
            "p99 ms": ms(s.pct(99)),
            "p50 vs raw": ratio(s.p50, b.p50),
            "p99 vs raw": ratio(s.pct(99), b.pct(99)),
        }


async def run_paired(queries: Sequence[Any], paths: dict[str, Fn], *, warmup: int = 3) -> Paired:
    out = Paired(list(paths))
    names = list(paths)
    for q in queries[:warmup]:
        for name in names:
            await paths[name](q)
    for i, q in enumerate(queries):
        order = names if i % 2 == 0 else list(reversed(names))
        for name in order:
            start = time.perf_counter()
            result = await paths[name](q)
            out.samples[name].add(time.perf_counter() - start)
            out.results[name].append(result)
    return out
