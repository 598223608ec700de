"""The README's API tour runs as written, in a fresh directory, on the embedded default."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_blocks import ROOT, code_blocks

# Executes a code block with top-level await, as `python -m asyncio` or a notebook would.
_RUNNER = """
import ast, asyncio, sys
code = compile(sys.stdin.read(), "README.md (API tour)", "exec",
               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
pending = eval(code, {"__name__": "__main__"})
if pending is not None:
    asyncio.run(pending)
print("tour finished")
"""


def api_tour() -> str:
    blocks = code_blocks("README.md", heading="## API tour")
    assert blocks, "README's API tour has no python block"
    return blocks[0]


@pytest.fixture
def fresh_dir() -> Iterator[Path]:
    # Private to this test (not pytest's shared per-user temp root).
    path = Path(tempfile.mkdtemp(prefix="memstore-tour-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.sqlite
def test_api_tour_runs_verbatim_in_a_fresh_directory(fresh_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_URL"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's memstore
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=api_tour(),
        cwd=fresh_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "tour finished" in done.stdout
    # The embedded default: ./memstore.db, created in the working directory.
    assert (fresh_dir / "memstore.db").is_file()


@pytest.mark.sqlite
def test_api_tour_pasted_into_the_asyncio_repl(fresh_dir: Path) -> None:
    # What the README says a reader can do: paste the block into `python -m asyncio`
    # and press Enter once more. The REPL reads stdin line by line as typed input; a
    # blank line inside the `async with` would end the block there and turn every
    # later line into an IndentationError (printed, not an exit status).
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_URL"}
    env["PYTHONPATH"] = str(ROOT)
    typed = api_tour() + "\n" + 'print("tour", "finished")\n'
    done = subprocess.run(
        [sys.executable, "-m", "asyncio"],
        input=typed,
        cwd=fresh_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Error" not in output and "Traceback" not in output, output
    assert "tour finished" in done.stdout, output
    assert (fresh_dir / "memstore.db").is_file()
