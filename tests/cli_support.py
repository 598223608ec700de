"""Running the ``memstore`` command as a user would, and what a refusal must look like."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m memstore ARGS`` in ``cwd``, this checkout first, no ``$MEMSTORE_URL``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MEMSTORE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "memstore", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def assert_configuration_error_line(result: subprocess.CompletedProcess[str], cause: str) -> None:
    """Exit 1 with one ``ConfigurationError`` line naming ``cause``, and no traceback."""
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert ": ConfigurationError: " in lines[0], lines
    assert cause in lines[0], lines
