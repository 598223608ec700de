"""scripts/bench.py --quick prints the issue table's per-call rows (no timings checked).

Every row (recall hybrid and vector-only at three tenant sizes, store.facts as-of,
fact_history and recall_facts on 19-version chains) is printed against its
baseline, and recall_facts' hand-written statement returns memstore's ranking.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench.py"
# Small enough for a test; the tenants come out at 300, 50 and 10 rows.
SIZES = ("--recall-rows-pg", "1500", "--recall-rows-sqlite", "1500")
SIZES += ("--temporal-versions", "4000", "--queries", "6")


def test_quick_bench_prints_every_per_call_row(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if backend not in ("sqlite", "postgres"):
        pytest.skip("the per-call rows compare SQLite and plain Postgres")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    if backend == "postgres":
        admin = make_url(request.getfixturevalue("pg_cluster").admin_url)
        # the benchmark creates its databases on this server (libpq form, as asyncpg takes it)
        env["MEMSTORE_BENCH_PG_URL"] = admin.set(drivername="postgresql").render_as_string(
            hide_password=False
        )
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--scenario",
            "recall,temporal",
            "--backends",
            backend,
            "--workdir",
            str(tmp_path / "dbs"),
            *SIZES,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table = done.stdout.rsplit("### Issue table: per-call rows", 1)[-1]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    for path, base in (("recall (hybrid)", "raw hybrid SQL"), ("recall vector-only", "raw vector")):
        for at in ("10-row tenants", "50-row tenant", "300-row tenant"):
            assert any(
                line.startswith(f"| {path} | {backend} | {at} | ") and f"x {base}" in line
                for line in rows
            ), table
    for call, base in (
        ("`store.facts` as-of", "raw SQL as-of (subject, predicate)"),
        ("`fact_history`", "raw SQL history"),
        ("`recall_facts`", "hand-written hybrid fact SQL"),
    ):
        assert any(
            line.startswith(f"| {call} | {backend} | 19-version chains | ")
            and f"x {base} |" in line
            for line in rows
        ), table
    # the hand-written fact statement ranks as memstore does, query by query
    guard = f"bi-temporal {backend} recall_facts (19-version chains): same version ids"
    assert any(
        guard in line and "| 6/6 queries | met |" in line for line in done.stdout.splitlines()
    )
    assert "results differ" not in table
