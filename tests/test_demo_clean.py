"""The README's demo command leaves the checkout clean (no generated file in git)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _git_status() -> str | None:
    if shutil.which("git") is None:
        return None
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return done.stdout if done.returncode == 0 else None


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-test-demo-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.sqlite
def test_demo_script_writes_nothing_into_the_checkout(private_tmp: Path) -> None:
    before = _git_status()
    if before is None:
        pytest.skip("not a git checkout")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(private_tmp))
    env.pop("MEMSTORE_URL", None)
    done = subprocess.run(
        [sys.executable, "scripts/demo.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "what did we believe before the correction? (transaction time)\n  Paris" in done.stdout
    assert _git_status() == before
    # The database went to the private temporary directory, as printed.
    (kept,) = private_tmp.glob("memstore-demo-*/memstore-demo.db")
    assert f"sqlite3 {kept}" in done.stdout
    assert not list(ROOT.glob("memstore-demo.db*"))
