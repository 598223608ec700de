"""One side of scripts/bench_otel.py: a process measuring per-call times of one memstore tree.

Run as ``python otelworker.py MODE URL`` with the tree to measure first on PYTHONPATH.
MODE: ``base`` (a tree without instrumentation), ``off`` (this tree, the OpenTelemetry
API imported and no SDK: what an application that has the API through some other
library gets), ``on`` (this tree, the SDK with in-memory span exporter and metric reader).
It seeds its own tenant, prints ``ready`` and then answers each line ``OP N`` read from
stdin with one JSON line: the N per-call times of OP in nanoseconds.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchlib.words import TOPICS, sentence

USER = "bench-user"


def _install_sdk() -> Any:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return exporter, reader


async def main(mode: str, url: str) -> None:
    exported: Any = None
    if mode == "on":
        exported = _install_sdk()
    elif mode == "off":
        import opentelemetry.metrics
        import opentelemetry.trace  # noqa: F401
    from memstore import MemoryStore
    from memstore.types import Episode, Fact

    rng = random.Random(7)
    async with MemoryStore.open(url, auto_migrate=True) as store:
        await store.remember_many(
            [
                Episode(
                    user_id=USER,
                    session_id=f"s{n // 50}",
                    input=sentence(rng, 20),
                    output=sentence(rng, 40),
                )
                for n in range(300)
            ]
        )
        for n in range(20):
            await store.assert_fact(
                Fact(user_id=USER, subject="user", predicate=f"likes_{n}", object=TOPICS[n])
            )
        slots = 0

        async def recall() -> object:
            return await store.recall(f"{rng.choice(TOPICS)} {rng.choice(TOPICS)}", user_id=USER)

        async def facts() -> object:
            return await store.facts(user_id=USER)

        async def append() -> object:
            nonlocal slots
            slots += 1
            thread = f"t{slots // 5000}"  # under max_slots_per_thread
            return await store.threads.append(
                thread, {"text": "hello"}, from_id="agent", to_id="user", user_id=USER
            )

        ops: dict[str, Callable[[], Awaitable[object]]] = {
            "recall": recall,
            "facts": facts,
            "append": append,
        }
        print(json.dumps({"ready": True, "memstore": sys.modules["memstore"].__file__}), flush=True)
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line.strip():
                return
            op, count = line.split()
            call = ops[op]
            times: list[int] = []
            for _ in range(int(count)):
                started = time.perf_counter_ns()
                await call()
                times.append(time.perf_counter_ns() - started)
            spans = 0
            if exported is not None:
                spans = len(exported[0].get_finished_spans())
                exported[0].clear()  # memory stays flat over the run
            print(json.dumps({"times": times, "spans": spans}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
