"""A real Prometheus server (Debian's ``prometheus`` package, /usr/bin/prometheus) scraping
one target, on a free port with a private config and data directory; stopped on exit."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from served import answers_http, free_port, stopped, wait_until_ready

__all__ = ["PROMETHEUS", "Prometheus", "prometheus_server"]

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


class Prometheus:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.process = process
        self.log = log

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as answer:
            body = json.loads(answer.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=promql)["result"]
        return result

    def wait_for(self, promql: str, deadline_s: float = 90.0) -> list[dict[str, Any]]:
        """The query's result once it has one (Prometheus scrapes every second)."""
        end = time.monotonic() + deadline_s
        while True:
            found = self.query(promql)
            if found:
                return found
            if time.monotonic() > end or self.process.poll() is not None:
                raise AssertionError(
                    f"no result for {promql!r}; prometheus log:\n{self.log.read_text()[-3000:]}"
                )
            time.sleep(0.5)


@contextmanager
def prometheus_server(root: Path, target: str) -> Iterator[Prometheus]:
    """Prometheus scraping ``target`` (``host:port``) every second."""
    config = root / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: memstore\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = root / "prometheus.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={root / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-lifecycle",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    with stopped(process):
        ready = answers_http(f"{url}/-/ready")
        wait_until_ready(process, ready, what="prometheus", log=log, seconds=60)
        yield Prometheus(url, process, log)
