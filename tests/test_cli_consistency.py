"""The ``memstore`` commands behave alike: no database created behind a mistyped path,
one tenant option, one exit status for a missing extra, help for every command and
option, and the demo's headings say what their lines show.

Commands run as real subprocesses (the worktree's code, a private directory, no
inherited ``MEMSTORE_*`` setting); the parser checks use ``build_parser`` itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memstore.cli import build_parser
from memstore.schema.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _memstore(
    *args: str, cwd: Path, prelude: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    # ``prelude`` runs first, e.g. to make an optional package look uninstalled.
    code = f"{prelude}\nfrom memstore.cli import main\nraise SystemExit(main({list(args)!r}))\n"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _one_line_failure(done: subprocess.CompletedProcess[str], command: str) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"memstore {command}: "), done.stderr
    return lines[0]


# ---- operations commands never create a database -------------------------------------

# Every command but migrate and demo (which create one on purpose); port 0 would bind
# any free port if a server ever started.
OPS_COMMANDS: dict[str, list[str]] = {
    "gc": ["gc"],
    "export": ["export", "--user-id", "alice"],
    "import": ["import", "--user-id", "alice", "-i", "DUMP"],
    "consolidate": ["consolidate"],
    "reembed": ["reembed"],
    "inspect": ["inspect", "--port", "0"],
    "mcp-stdio": ["mcp", "--user-id", "alice"],
    "mcp-http": ["mcp", "--transport", "http", "--allow-user", "alice", "--port", "0"],
    "rls": ["rls", "status"],
    "citus": ["citus", "--apply"],
}


@pytest.mark.sqlite
@pytest.mark.parametrize("name", sorted(OPS_COMMANDS))
def test_ops_commands_never_create_a_database(name: str, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    dump = tmp_path / "dump.jsonl"
    dump.write_text("")
    args = [str(dump) if a == "DUMP" else a for a in OPS_COMMANDS[name]]
    command = args[0]
    # In a directory without a database (the default ./memstore.db), and on a
    # mistyped path.
    for extra in ([], ["--url", f"sqlite:///{workdir / 'mistyped.db'}"]):
        done = _memstore(*args, *extra, cwd=workdir, timeout=60)
        line = _one_line_failure(done, command)
        assert sorted(p.name for p in workdir.iterdir()) == [], (extra, line)


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_reembed_on_a_database_without_schema(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        path = tmp_path / "empty.db"
        path.touch()  # exists, holds no schema
        url = f"sqlite+aiosqlite:///{path}"
    else:
        url = request.getfixturevalue("pg_cluster").create_database("noschema")
    done = _memstore("reembed", "--url", url, cwd=tmp_path)
    line = _one_line_failure(done, "reembed")
    assert "SchemaOutOfDate" in line and "memstore migrate" in line


# ---- one tenant option -----------------------------------------------------------------

TENANT_COMMANDS = ["consolidate", "export", "gc", "import", "mcp"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse offers no public way to list sub-commands.
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    raise AssertionError("no sub-commands")


@pytest.mark.parametrize("command", TENANT_COMMANDS)
def test_tenant_option_is_user_id_everywhere_with_user_as_hidden_alias(command: str) -> None:
    parser = build_parser()
    for spelling in ("--user-id", "--user"):
        args = parser.parse_args([command, spelling, "josé"])
        assert args.user_id == "josé", spelling
    help_text = _subparsers(parser)[command].format_help()
    assert "--user-id ID" in help_text
    assert "--user " not in help_text and "--user," not in help_text


def test_both_tenant_spellings_at_once_are_refused() -> None:
    # In export/import/gc they share a mutually exclusive group with --anonymous.
    with pytest.raises(SystemExit) as refused:
        build_parser().parse_args(["export", "--user", "a", "--user-id", "b"])
    assert refused.value.code == 2


# ---- a missing extra: one line, exit 1, for every command that needs one -----------------

HIDE = "import sys; sys.modules[{!r}] = None"


@pytest.mark.sqlite
@pytest.mark.parametrize(
    ("args", "hidden", "extra"),
    [
        (["mcp", "--user-id", "alice"], "mcp", "mcp"),
        (["mcp", "--transport", "http", "--allow-user", "alice"], "mcp", "mcp"),
        (["inspect"], "starlette", "inspect"),
        (["inspect"], "jinja2", "inspect"),
        (["inspect", "--embedder", "sentence-transformers"], "sentence_transformers", "embeddings"),
        (["reembed", "--embedder", "sentence-transformers"], "sentence_transformers", "embeddings"),
        (
            ["consolidate", "--embedder", "sentence-transformers"],
            "sentence_transformers",
            "embeddings",
        ),
        (
            ["consolidate", "--extractor", "llm", "--llm-url", "http://x/v1", "--llm-model", "m"],
            "openai",
            "llm",
        ),
        (
            ["import", "-i", "-", "--embedder", "sentence-transformers"],
            "sentence_transformers",
            "embeddings",
        ),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else v,
)
def test_missing_extra_exits_1_with_the_install_line(
    args: list[str], hidden: str, extra: str, tmp_path: Path
) -> None:
    path = tmp_path / "store.db"
    asyncio.run(upgrade(f"sqlite+aiosqlite:///{path}"))
    done = _memstore(*args, "--url", f"sqlite:///{path}", cwd=tmp_path, prelude=HIDE.format(hidden))
    line = _one_line_failure(done, args[0])
    assert line.endswith(f"install the extra: pip install 'memstore[{extra}]'"), line


# ---- help: a description for every command, help for every option ------------------------


def test_every_command_has_a_description_and_every_option_help() -> None:
    missing = []
    for name, sub in _subparsers(build_parser()).items():
        if not (sub.description or "").strip():
            missing.append(f"{name}: no description")
        for action in sub._actions:  # noqa: SLF001
            if isinstance(action, argparse._HelpAction):  # noqa: SLF001
                continue
            if not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def _option_help(command: str, option: str) -> str:
    sub = _subparsers(build_parser())[command]
    (action,) = [a for a in sub._actions if option in a.option_strings]  # noqa: SLF001
    return str(action.help)


def test_embedder_help_says_what_each_command_uses_it_for() -> None:
    inspect_help = _option_help("inspect", "--embedder")
    assert "this command writes" not in inspect_help and "queries" in inspect_help
    assert "search box" in inspect_help
    for command in ("consolidate", "import"):
        assert "vectors this command writes" in _option_help(command, "--embedder")
    # reembed switches embedder: it need not be the database's already.
    assert "becomes the database's" in _option_help("reembed", "--embedder")
    assert "stdio" in _option_help("mcp", "--transport")


# ---- the demo's headings ---------------------------------------------------------------


def _sections(out: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    for block in out.split("\n== ")[1:]:
        title, *lines = block.strip("\n").split("\n")
        sections[title] = lines
    return sections


@pytest.mark.sqlite
def test_demo_headings_match_their_content(tmp_path: Path, capsys: Any) -> None:
    from memstore.cli.demo_story import run_demo

    asyncio.run(run_demo(f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}"))
    sections = _sections(capsys.readouterr().out)
    assert sections["where alice lives — as known now"] == ["  London (valid since 2026-05-31)"]
    assert sections["where did alice live in April? (valid time)"] == ["  Paris"]
    assert sections["what did we believe before the correction? (transaction time)"] == ["  Paris"]
