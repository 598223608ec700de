"""Every program in examples/ runs as a user would run it and prints what it promises.

Each runs in a fresh interpreter with a private temporary directory as its working
directory, so it uses the embedded SQLite default (./memstore.db there), with
$MEMSTORE_URL removed; none needs the network. Each is run twice to check it can
be re-run on the same database.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ID = r"[0-9a-f-]{36}"

# Lines (regular expressions) each example must print, in this order.
EXPECTED: dict[str, list[str]] = {
    "quickstart.py": [
        r"recall\('what is the cat called'\) -> I adopted a cat named Miso\.",
        r"recall\('marathon training'\) -> I'm training for a marathon\.",
        r"bob sees: \['My cat is called Tiger\.'\]",
        r"best match for 'ramen': My favourite food is ramen\. \(score [0-9.]+\)",
    ],
    "bitemporal_facts.py": [
        r"now: \['London'\]",
        r"in April: \['Paris'\]",
        r"as believed before the move was recorded: \['Paris'\]",
        r"  Paris   valid 2025-03-01 -> \.\.\.        superseded",
        r"  Paris   valid 2025-03-01 -> 2025-06-01 current",
        r"  London  valid 2025-06-01 -> \.\.\.        current",
    ],
    "working_blocks.py": [
        r"persona v2: Friendly assistant\. Answers briefly\.",
        r"goals v1: Help Alice plan her trip to Japan\.",
        r"second editor: Conflict - .*version 3, not 2",
        r"  v1: Friendly assistant\.",
        r"  v2: Friendly assistant\. Answers briefly\.",
        r"  v3: Formal assistant\.",
    ],
    "shared_threads.py": [
        r"10 slots, indices \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\]",
        r"from analyst: \['finding 0', 'finding 1', 'finding 2', 'finding 3', 'finding 4'\]",
        r"from scout: \['finding 0', 'finding 1', 'finding 2', 'finding 3', 'finding 4'\]",
        r"newest slot index: 9",
        r"stats: \{'thread_count': 1, 'total_slots': 10, .*",
    ],
    "working_memory.py": [
        r"keys: \['otp', 'plan'\]",
        r"otp after its TTL: <expired>",
        r"plan after restore: \['flights', 'hotel', 'rail pass'\]",
        r"task book-trip: step 1 of 3",
        r"scratchpad: \['flights: cheapest on Tuesday'\]",
        r"another agent instance sees: \{\}",
        r"checkpoints: \['before hotel search'\]",
    ],
    "consolidation.py": [
        r"processed 4 turns: 5 facts added, 1 superseded",
        r"  alice allergic_to peanuts \(valid since 2025-04-01\)",
        r"  alice likes bakeries \(valid since 2025-04-01\)",
        r"  alice lives_in London \(valid since 2025-05-31\)",
        r"  alice name Alice \(valid since 2025-03-02\)",
        r"  alice works_at Acme \(valid since 2025-03-02\)",
        r"second run processed: 0",
    ],
    "live_threads.py": [
        r"handed over 'summarise the report': SUMMARISE THE REPORT \(\d+ ms\)",
        r"handed over 'draft the reply': DRAFT THE REPLY \(\d+ ms\)",
        r"handed over 'book the meeting': BOOK THE MEETING \(\d+ ms\)",
        r"results: \[0, 1, 2\]",
    ],
    "agent_loop.py": [
        rf"Your cat is Miso \[episode:{ID}\]\.",
        r"turns remembered in s2: 2",
    ],
}


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-test-examples-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.sqlite
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_and_prints_what_it_shows(name: str, workdir: Path) -> None:
    source = (EXAMPLES / name).read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(source)), f"{name} needs a docstring saying what it shows"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env["PYTHONPATH"] = str(ROOT)
    for _run in range(2):
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / name)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        position = 0
        for pattern in EXPECTED[name]:
            found = [
                i for i, line in enumerate(lines) if i >= position and re.fullmatch(pattern, line)
            ]
            assert found, f"{name}: no line matching {pattern!r} in order in:\n{done.stdout}"
            position = found[0] + 1
    # The default store is ./memstore.db in the working directory, nowhere else.
    assert (workdir / "memstore.db").is_file()
