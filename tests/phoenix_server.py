"""A real OTLP receiver: Arize Phoenix (``phoenix serve``, from PyPI), which takes traces over
OTLP/HTTP at ``/v1/traces`` and serves the spans it stored at ``/v1/projects/NAME/spans``.

It runs from its own virtual environment (``MEMSTORE_TEST_PHOENIX``: the directory,
which .ci/run makes from .ci/phoenix.txt; its dependencies would clash with the test
venv's), on free ports, with a private working directory; stopped on exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from served import answers_http, free_port, stopped, wait_until_ready

__all__ = ["PHOENIX_VENV", "Phoenix", "phoenix_server"]

PHOENIX_VENV = os.environ.get("MEMSTORE_TEST_PHOENIX")


class Phoenix:
    def __init__(self, url: str) -> None:
        self.url = url
        self.traces_endpoint = f"{url}/v1/traces"

    def spans_of_trace(self, project: str, root_name: str, deadline_s: float = 120) -> list[Any]:
        """The project's spans once the trace under ``root_name`` is stored whole (the
        receiver writes what it received in the background)."""
        end = time.monotonic() + deadline_s
        seen = -1
        while True:
            try:
                spans = self.spans(project)
            except urllib.error.HTTPError as error:
                if error.code != 404:  # 404: the project is not made yet
                    raise
                spans = []
            if any(s["name"] == root_name for s in spans) and len(spans) == seen:
                return spans
            seen = len(spans) if any(s["name"] == root_name for s in spans) else -1
            if time.monotonic() > end:
                raise AssertionError(f"no trace {root_name!r} in {project!r}: {len(spans)} spans")
            time.sleep(1.0)

    def spans(self, project: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = f"?limit=1000{f'&cursor={cursor}' if cursor else ''}"
            address = f"{self.url}/v1/projects/{project}/spans{query}"
            with urllib.request.urlopen(address, timeout=30) as answer:
                page = json.loads(answer.read())
            found += page["data"]
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return found


@contextmanager
def phoenix_server(root: Path) -> Iterator[Phoenix]:
    assert PHOENIX_VENV is not None
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(root),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
    }
    log = root / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(Path(PHOENIX_VENV) / "bin" / "phoenix"), "serve"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    with stopped(process):
        ready = answers_http(f"{url}/healthz")
        # 300 s: its imports and migrations, on a loaded machine
        wait_until_ready(process, ready, what="phoenix", log=log, seconds=300, poll=0.5)
        yield Phoenix(url)
