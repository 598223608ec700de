"""The trace of one agent turn as a picture, for docs/operations.md.

    PYTHONPATH=. python scripts/otel_turn_picture.py     # writes docs/img/otel-turn.png

One turn on a fresh SQLite store seeded with a short history, under an application span
``agent.turn``: ``context()``, a placeholder span for the LLM call (the application's,
not memstore's), ``remember()`` of the turn and ``threads.append()`` of the answer. The
spans come from the OpenTelemetry SDK's in-memory exporter; the timeline is drawn as
HTML and screenshotted with headless Chromium (Debian's ``chromium``).
"""

from __future__ import annotations

import asyncio
import html
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memstore import MemoryStore
from memstore.types import Episode, Fact

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "docs" / "img"
WIDTH = 1400
ROW = 22
LABEL = 330


async def one_turn(url: str) -> None:
    async with MemoryStore.open(url) as store:
        for n in range(30):
            await store.remember(
                Episode(
                    user_id="alice",
                    session_id="s1" if n >= 24 else "s0",
                    input=f"we talked about hiking trip {n} and the budget",
                    output="noted",
                )
            )
        await store.assert_fact(
            Fact(user_id="alice", subject="user", predicate="likes", object="hiking")
        )
        tracer = trace.get_tracer("agent-app")
        with tracer.start_as_current_span("agent.turn"):
            await store.context(user_id="alice", session_id="s1", query="plan the hiking trip")
            with tracer.start_as_current_span("llm.chat (placeholder)"):
                await asyncio.sleep(0.03)
            await store.remember(
                Episode(user_id="alice", session_id="s1", input="plan the trip", output="ok")
            )
            await store.threads.append(
                "s1", {"text": "ok"}, from_id="agent", to_id="user", user_id="alice"
            )


def ordered(spans: list[ReadableSpan]) -> list[tuple[ReadableSpan, int]]:
    """Depth-first, children by start time: (span, depth)."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for span in spans:
        parent = span.parent.span_id if span.parent else None
        by_parent.setdefault(parent if parent in ids else None, []).append(span)
    out: list[tuple[ReadableSpan, int]] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(by_parent.get(parent, []), key=lambda s: s.start_time or 0):
            out.append((span, depth))
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return out


def colour(span: ReadableSpan) -> str:
    attributes: Any = span.attributes or {}
    if "db.operation.name" in attributes:
        return "#6baed6"
    if "gen_ai.operation.name" in attributes:
        return "#fd8d3c"
    if span.name.startswith("memstore."):
        return "#74c476"
    return "#bcbddc"


def render(spans: list[ReadableSpan]) -> str:
    rows = ordered([s for s in spans if s.start_time and s.end_time])
    start = min(s.start_time or 0 for s, _ in rows)
    end = max(s.end_time or 0 for s, _ in rows)
    scale = (WIDTH - LABEL - 70) / (end - start)
    bars = []
    for n, (span, depth) in enumerate(rows):
        assert span.start_time is not None and span.end_time is not None
        left = LABEL + (span.start_time - start) * scale
        width = max(1.5, (span.end_time - span.start_time) * scale)
        ms = (span.end_time - span.start_time) / 1e6
        name = html.escape(span.name)
        bars.append(
            f'<div class="label" style="top:{n * ROW}px;padding-left:{depth * 14}px">{name}</div>'
            f'<div class="bar" style="top:{n * ROW + 3}px;left:{left:.1f}px;width:{width:.1f}px;'
            f'background:{colour(span)}"></div>'
            f'<div class="ms" style="top:{n * ROW}px;left:{left + width + 4:.1f}px">'
            f"{ms:.1f} ms</div>"
        )
    height = len(rows) * ROW + 60
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
body {{ font: 12px/1.4 sans-serif; margin: 12px; width: {WIDTH}px; }}
.chart {{ position: relative; height: {height}px; }}
.label {{ position: absolute; left: 0; width: {LABEL}px; white-space: nowrap; overflow: hidden; }}
.bar {{ position: absolute; height: {ROW - 6}px; border-radius: 2px; }}
.ms {{ position: absolute; color: #555; font-size: 11px; }}
.key span {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 14px; }}
</style></head><body>
<div class="key"><b>One agent turn</b> ({(end - start) / 1e6:.1f} ms)
<span style="background:#bcbddc"></span>application
<span style="background:#74c476"></span>memstore operation / step
<span style="background:#6baed6"></span>statement
<span style="background:#fd8d3c"></span>model call</div><br>
<div class="chart">{"".join(bars)}</div></body></html>
"""


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    scratch = Path(tempfile.mkdtemp(prefix="memstore-otel-picture-"))
    try:
        asyncio.run(one_turn(f"sqlite:///{scratch / 'turn.db'}"))
        (turn,) = [s for s in exporter.get_finished_spans() if s.name == "agent.turn"]
        ours = [
            s for s in exporter.get_finished_spans() if s.context.trace_id == turn.context.trace_id
        ]
        page = scratch / "otel-turn.html"
        page.write_text(render(ours), encoding="utf-8")
        rows = len(ours)
        subprocess.run(
            [
                shutil.which("chromium") or "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={OUT / 'otel-turn.png'}",
                f"--window-size={WIDTH + 30},{rows * ROW + 110}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {OUT / 'otel-turn.png'} ({rows} spans)")


if __name__ == "__main__":
    main()
