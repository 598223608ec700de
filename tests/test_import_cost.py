"""``import memstore`` and the CLI stay light: no Alembic, no torch unless they are used.

Each check runs in a fresh interpreter (this test process has imported everything
already), with this checkout first on ``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Alembic (and Mako under it) only when migrating or checking a schema; the
# embedding stack only with SentenceTransformerEmbedder.
HEAVY = ("alembic", "mako", "torch", "sentence_transformers", "transformers")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_import_memstore_leaves_alembic_and_torch_out() -> None:
    modules = _modules_after(
        f"import memstore\nassert memstore.__file__.startswith({str(ROOT)!r}), memstore.__file__"
    )
    assert "memstore.store" in modules  # the probe did import the package
    assert _heavy(modules) == []


def _cli(argv: list[str]) -> str:
    return (
        "import contextlib, io\n"
        "from memstore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
    )


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["migrate", "--help"], ["gc", "--help"]]
)
def test_cli_help_and_version_leave_alembic_and_torch_out(argv: list[str]) -> None:
    assert _heavy(_modules_after(_cli(argv))) == []


def test_cli_imports_only_the_sub_command_it_runs() -> None:
    modules = _modules_after(_cli(["import", "--help"]))
    from memstore.cli import COMMAND_MODULES

    # Shared argument helpers (e.g. memstore.cli.embedder_args) may load; other commands may not.
    commands = sorted(m for m in modules if m in COMMAND_MODULES)
    assert commands == ["memstore.cli.import_dump"]
    assert "memstore.search.reembed" not in modules


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    # argparse offers no public way to list sub-commands.
    subparsers = argparse._SubParsersAction  # noqa: SLF001
    (action,) = [a for a in parser._actions if isinstance(a, subparsers)]  # noqa: SLF001
    return list(action.choices)


def test_every_sub_command_is_found_from_its_name() -> None:
    """A sub-command whose module is not ``memstore.cli.<name>`` needs a COMMAND_ALIASES entry."""
    from memstore.cli import COMMAND_MODULES, build_parser, command_module

    every = _choices(build_parser(["--help"]))
    assert len(every) == len(COMMAND_MODULES)
    for name in every:
        assert command_module([name, "--help"]) in COMMAND_MODULES
        assert _choices(build_parser([name, "--help"])) == [name]
