"""scripts/bench_turn_loop.py --quick runs to the end and prints every row (no timings checked)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_turn_loop.py"
AGENTS = (1, 3)


def test_quick_turn_loop_prints_every_row(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if backend not in ("sqlite", "postgres"):
        pytest.skip("the benchmark compares SQLite and plain Postgres")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    if backend == "postgres":
        admin = make_url(request.getfixturevalue("pg_cluster").admin_url)
        # the benchmark creates its database on this server (libpq form, as asyncpg takes it)
        env["MEMSTORE_BENCH_PG_URL"] = admin.set(drivername="postgresql").render_as_string(
            hide_password=False
        )
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--backend",
            backend,
            "--agents",
            ",".join(map(str, AGENTS)),
            "--dir",
            str(tmp_path / "dbs"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for n in AGENTS:
        assert sum(line.startswith(f"| {backend} | {n} | ") for line in lines) == 4, done.stdout
        for call in ("context", "remember", "append"):
            assert any(line.startswith(f"| {backend} | {n} | {call} |") for line in lines)
    assert "GUARD FAILED" not in done.stdout
    assert f"- {backend}: pool" in done.stdout
    assert "target memstore/raw throughput" in done.stdout
