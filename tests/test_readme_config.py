"""The configuration reference (docs/configuration.md) lists every setting there is."""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

import pytest
from doc_blocks import section

from memstore import MemoryStore
from memstore.cli import build_parser
from memstore.db.engine import create_engine

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *ROOT.glob("memstore/**/*.py"),
    *ROOT.glob("migrations/**/*.py"),
    *ROOT.glob("scripts/**/*.py"),
    ROOT / "tests" / "conftest.py",
]
# Names read from the environment: os.environ.get("X"), os.environ["X"], getenv("X"),
# env.get("X") on a mapping that defaults to os.environ, setdefault("X", ...).
ENV_READ = re.compile(
    r"""(?:environ(?:\.get|\.setdefault)?|getenv|\benv\.get|\benv)\s*[\(\[]\s*["']([A-Z][A-Z0-9_]+)["']"""
)


# Read, but not configuration of memstore: bench.py only prints it with the command it ran.
NOT_SETTINGS = {"PYTHONPATH"}


def _section() -> str:
    return section("docs/configuration.md", "# Configuration reference")


def _environment_variables() -> set[str]:
    names: set[str] = set()
    for path in SOURCES:
        source = path.read_text(encoding="utf-8")
        names.update(ENV_READ.findall(source))
        names.update(re.findall(r"\bMEMSTORE_[A-Z0-9_]*[A-Z0-9]\b", source))
    return names - NOT_SETTINGS


def test_the_scan_finds_the_variables_we_know() -> None:
    found = _environment_variables()
    assert {
        "MEMSTORE_URL",
        "MEMSTORE_LLM_MODEL",
        "OPENAI_API_KEY",
        "HF_HUB_OFFLINE",
        "MEMSTORE_SLOW_QUERY_MS",
        "MEMSTORE_EMBEDDING_DIM",
    } <= found


def test_every_environment_variable_is_in_the_table() -> None:
    section = _section()
    missing = sorted(
        n for n in _environment_variables() if f"`{n}`" not in section and f"${n}" not in section
    )
    assert missing == []


def _options(parser: argparse.ArgumentParser) -> list[str]:
    found = []
    # argparse offers no public way to list options and sub-commands.
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                found.append(name)
                found.extend(_options(sub))
        elif action.help != argparse.SUPPRESS:
            found.extend(o for o in action.option_strings if o.startswith("--") and o != "--help")
    return found


def test_every_cli_option_is_in_the_table() -> None:
    section = _section()
    options = _options(build_parser(["--help"]))
    assert "--extractor" in options and "reembed" in options
    assert sorted({o for o in options if o not in section}) == []


@pytest.mark.parametrize("function", [MemoryStore.open, create_engine])
def test_every_open_and_engine_option_is_in_the_table(function: object) -> None:
    section = _section()
    parameters = [
        p.name
        for p in inspect.signature(function).parameters.values()  # type: ignore[arg-type]
        if p.kind is not inspect.Parameter.VAR_KEYWORD and p.name != "cls"
    ]
    assert sorted(p for p in parameters if f"`{p}`" not in section) == []
