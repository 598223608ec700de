"""Where the ``memstore`` commands meet files and URLs: a failed export keeps its target,
unreadable or unwritable dump files, empty URLs, SQLite URLs naming a directory or a
missing directory, a database that cannot be opened, and the demo told twice.

Each mistake is one line on stderr, exit 1, and nothing written. Commands run as real
subprocesses (the worktree's code, a private directory, no inherited ``MEMSTORE_*``).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import table_counts

from memstore import ConfigurationError, Episode, MemoryStore
from memstore.schema.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]

# Every command, with the arguments it needs to get as far as opening its database
# ("OUT" and "DUMP" become files outside the working directory). Port 0 would bind
# any free port if a server ever started.
COMMANDS: dict[str, list[str]] = {
    "migrate": ["migrate"],
    "demo": ["demo"],
    "gc": ["gc"],
    "export": ["export", "--user-id", "alice", "-o", "OUT"],
    "import": ["import", "--user-id", "alice", "-i", "DUMP"],
    "consolidate": ["consolidate"],
    "reembed": ["reembed"],
    "inspect": ["inspect", "--port", "0"],
    "mcp-stdio": ["mcp", "--user-id", "alice"],
    "mcp-http": ["mcp", "--transport", "http", "--allow-user", "alice", "--port", "0"],
    "rls": ["rls", "status"],
    "citus-apply": ["citus", "--apply"],
    "citus-status": ["citus", "--status"],
}
# Runs the command once, then prints the threads still running.
THREADS_LEFT = "threads left after main: "
ONE_RUN = f"""
import sys, threading
from memstore.cli import main
code = main(sys.argv[1:])
others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
print({THREADS_LEFT!r} + repr(others))
raise SystemExit(code)
"""
# Runs the command line once per [argv, $MEMSTORE_URL or None] of argv[1] (JSON) in one
# process (the extras some commands import cost seconds), each call's stderr apart;
# prints [[exit status, stderr], ...] as JSON.
RUNS = """
import contextlib, io, json, os, sys
from memstore.cli import main
results = []
for args, url in json.loads(sys.argv[1]):
    os.environ.pop("MEMSTORE_URL", None)
    if url is not None:
        os.environ["MEMSTORE_URL"] = url
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(args)
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _memstore(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "memstore", *args], cwd)


def _runs(
    calls: list[tuple[list[str], str | None]], cwd: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Each call's exit status and stderr, as if run alone."""
    done = _run(["-c", RUNS, json.dumps(calls)], cwd, timeout=300)
    # Anything on the process's own stderr escaped every call (e.g. a thread's traceback).
    assert done.returncode == 0 and done.stderr == "", done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    return [
        subprocess.CompletedProcess(args, code, "", err)
        for (args, _), (code, err) in zip(calls, results, strict=True)
    ]


def _one_line_failure(done: subprocess.CompletedProcess[str], command: str, *causes: str) -> str:
    assert done.returncode == 1, (done.args, done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"memstore {command}: "), done.stderr
    for cause in causes:
        assert cause in lines[0], (done.args, lines[0])
    return lines[0]


def _args(name: str, tmp_path: Path) -> list[str]:
    dump = tmp_path / "dump.jsonl"
    dump.write_text("")
    out = tmp_path / "out.jsonl"
    return [str(dump) if a == "DUMP" else str(out) if a == "OUT" else a for a in COMMANDS[name]]


def _listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def _unopenable_url(tmp_path: Path) -> str:
    # A URI filename skips the path checks, so the driver itself fails to open it.
    return f"sqlite+aiosqlite:///file:{tmp_path / 'missing' / 'x.db'}?mode=ro&uri=true"


# ---- URLs -------------------------------------------------------------------------------


@pytest.mark.sqlite
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_bad_urls_are_one_line_and_write_nothing(name: str, tmp_path: Path) -> None:
    if name.startswith("mcp"):
        # Without the extra, the one line names the missing extra (tests/test_cli_flags.py).
        pytest.importorskip("mcp", reason="memstore mcp needs memstore[mcp]")
    workdir = tmp_path / "work"
    (workdir / "adir").mkdir(parents=True)
    (workdir / "notes.txt").write_text("not a database\n")
    args = _args(name, tmp_path)
    empty = ["ConfigurationError: ", "the database URL is empty"]
    cases: list[tuple[list[str], str | None, list[str]]] = [
        # An empty URL is a mistake, not ./memstore.db.
        (["--url", ""], None, empty),
        (["--url", " \t"], None, empty),
        (
            ["--url", f"sqlite+aiosqlite:///{workdir / 'adir'}"],
            None,
            ["ConfigurationError: ", "it is a directory"],
        ),
        (
            ["--url", f"sqlite:///{workdir / 'missing' / 'x.db'}"],
            None,
            ["ConfigurationError: ", "does not exist"],
        ),
    ]
    if name != "demo":  # the demo's default is a fresh file, never $MEMSTORE_URL
        cases.append(([], "", ["ConfigurationError: ", "$MEMSTORE_URL is empty"]))
    if not name.startswith(("rls", "citus")):  # those refuse SQLite before connecting
        cases.append((["--url", _unopenable_url(tmp_path)], None, ["unable to open"]))
        cases.append(
            (
                ["--url", f"sqlite:///{workdir / 'notes.txt'}"],
                None,
                ["ConfigurationError: ", "not a SQLite database"],
            )
        )
    outcomes = _runs([(args + extra, url) for extra, url, _ in cases], cwd=workdir)
    for (_, _, causes), done in zip(cases, outcomes, strict=True):
        _one_line_failure(done, args[0], *causes)
    # Above all no ./memstore.db, no output file, nothing in the directory.
    assert _listing(workdir) == ["adir", "notes.txt"] and _listing(workdir / "adir") == []
    assert (workdir / "notes.txt").read_text() == "not a database\n"
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.sqlite
@pytest.mark.parametrize("command", ["gc", "reembed"])
def test_a_failed_sqlite_connect_stops_its_thread_before_the_loop_ends(
    command: str, tmp_path: Path
) -> None:
    # aiosqlite's connection thread reports its stop to the event loop; a thread still
    # running when the command returns finds the loop closed and prints a traceback
    # (or, at exit, dies without one): a race, hence five runs.
    for _ in range(5):
        done = _run(["-c", ONE_RUN, command, "--url", _unopenable_url(tmp_path)], tmp_path)
        _one_line_failure(done, command, "unable to open database file")
        assert f"{THREADS_LEFT}[]" in done.stdout, done.stdout


# ---- dump files -------------------------------------------------------------------------


async def _seed(url: str) -> None:
    async with MemoryStore.open(url) as store:
        await store.remember(
            Episode(user_id="alice", session_id="s", input="I live in Paris", output="ok")
        )


def test_a_failed_export_leaves_its_target_as_it_was(db_url: str, tmp_path: Path) -> None:
    asyncio.run(_seed(db_url))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    keep = out_dir / "keep.jsonl"
    keep.write_text("precious\n")
    keep.chmod(0o640)
    calls: list[tuple[list[str], str | None]] = [
        (["export", "--url", db_url, "--user-id", user, "-o", str(target)], None)
        for user in ("", "x" * 300)  # refused once the database is open
        for target in (keep, out_dir / "new.jsonl")
    ]
    for done in _runs(calls, cwd=tmp_path):
        _one_line_failure(done, "export", "InvalidInput: ", "user_id")
    assert keep.read_text() == "precious\n"
    assert _listing(out_dir) == ["keep.jsonl"]  # no new file, no partial one
    # A successful export replaces it whole and keeps its mode.
    done = _memstore("export", "--url", db_url, "--user-id", "alice", "-o", str(keep), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in keep.read_text().splitlines()]
    assert lines[0]["user_id"] == "alice" and lines[-1]["end"]["rows"]["episodes"] == 1
    assert stat.S_IMODE(keep.stat().st_mode) == 0o640
    assert _listing(out_dir) == ["keep.jsonl"]


@pytest.mark.sqlite
def test_unreadable_or_unwritable_dump_files_are_one_line(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    asyncio.run(upgrade(url))
    adir = tmp_path / "adir"
    adir.mkdir()
    (tmp_path / "latin1.jsonl").write_bytes(b'{"format": "caf\xe9"}\n')
    cases = [
        (["import", "-i", str(tmp_path / "missing.jsonl")], ["No such file or directory"]),
        (["import", "-i", str(adir)], ["Is a directory"]),
        (["import", "-i", str(tmp_path / "latin1.jsonl")], ["InvalidInput: ", "not UTF-8"]),
        (
            ["export", "--user-id", "alice", "-o", str(tmp_path / "missing" / "out.jsonl")],
            ["ConfigurationError: ", "does not exist"],
        ),
        (["export", "--user-id", "alice", "-o", str(adir)], ["it is a directory"]),
        (
            ["export", "--user-id", "alice", "-o", str(tmp_path / "store.db")],
            ["it is the database being exported"],
        ),
    ]
    before = _listing(tmp_path)
    database = (tmp_path / "store.db").read_bytes()
    outcomes = _runs([([*args, "--url", url], None) for args, _ in cases], cwd=tmp_path)
    for (args, causes), done in zip(cases, outcomes, strict=True):
        _one_line_failure(done, args[0], *causes)
    assert _listing(tmp_path) == before and _listing(adir) == []
    assert (tmp_path / "store.db").read_bytes() == database


# ---- the demo, told twice ---------------------------------------------------------------


async def _state(url: str) -> tuple[dict[str, int], list[Any]]:
    async with MemoryStore.open(url) as store:
        counts = await table_counts(url)
        dumps = [(await store.export(user_id=u))["tables"] for u in ("alice", "bob")]
    return counts, dumps


def test_the_demo_refuses_a_database_that_holds_its_story(db_url: str, tmp_path: Path) -> None:
    first = _memstore("demo", "--url", db_url, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "(transaction time)\n  Paris\n" in first.stdout
    before = asyncio.run(_state(db_url))
    again = _memstore("demo", "--url", db_url, cwd=tmp_path)
    _one_line_failure(again, "demo", "ConfigurationError: ", "'alice'", "without --url")
    assert again.stdout == ""
    assert asyncio.run(_state(db_url)) == before
    assert _listing(tmp_path) == []


@pytest.mark.sqlite
async def test_the_library_refuses_an_empty_url_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMSTORE_URL", raising=False)
    for url in ("", "  "):
        with pytest.raises(ConfigurationError, match="the database URL is empty"):
            async with MemoryStore.open(url):
                pass
    monkeypatch.setenv("MEMSTORE_URL", "")
    with pytest.raises(ConfigurationError, match=r"\$MEMSTORE_URL is empty"):
        async with MemoryStore.open():
            pass
    with pytest.raises(ConfigurationError, match=r"\$MEMSTORE_URL is empty"):
        await upgrade(None)
    assert _listing(tmp_path) == []
