"""Without an OpenTelemetry SDK memstore records nothing and builds nothing, and
``import memstore`` does not import ``opentelemetry`` at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace

from memstore import MemoryStore
from memstore.types import Episode, Fact

ROOT = Path(__file__).resolve().parent.parent


def test_import_memstore_imports_no_opentelemetry() -> None:
    probe = (
        "import json, sys\nimport memstore\nfrom memstore import MemoryStore\n"
        f"assert memstore.__file__.startswith({str(ROOT)!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('opentelemetry'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []


@pytest.fixture
def spans_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every span the API's tracer (a proxy while no SDK is set) is asked for."""
    started: list[str] = []
    for method in ("start_span", "start_as_current_span"):
        original = getattr(trace.ProxyTracer, method)

        def counted(self: Any, name: str, *a: Any, _o: Any = original, **k: Any) -> Any:
            started.append(name)
            return _o(self, name, *a, **k)

        monkeypatch.setattr(trace.ProxyTracer, method, counted)
    return started


async def test_with_the_api_and_no_sdk_no_span_is_built(
    store: MemoryStore, spans_started: list[str]
) -> None:
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    await store.remember(Episode(user_id="alice", session_id="s", input="zebra"))
    await store.assert_fact(Fact(user_id="alice", subject="u", predicate="likes", object="tea"))
    await store.recall("zebra", user_id="alice")
    await store.facts(user_id="alice")
    await store.context(user_id="alice", session_id="s", query="zebra")
    await store.threads.append("t", {"x": 1}, from_id="a", to_id="b", user_id="alice")
    # The probe sees the API's tracers when anything asks them for a span.
    trace.get_tracer("probe").start_span("probe").end()
    assert spans_started == ["probe"]
