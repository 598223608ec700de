"""``memstore.__version__``, ``memstore --version`` and the licence agree with pyproject.toml."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import memstore
from memstore import version as version_module

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_version_matches_pyproject() -> None:
    assert memstore.__version__ == PROJECT["version"]
    assert "__version__" in memstore.__all__


def test_version_falls_back_to_pyproject_without_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> str:
        raise version_module.PackageNotFoundError(name)

    monkeypatch.setattr(version_module, "version", missing)
    assert version_module.read_version() == PROJECT["version"]


def test_cli_version_prints_it_and_exits_zero() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--version"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"memstore {PROJECT['version']}"


def test_license_file_matches_pyproject() -> None:
    assert PROJECT["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "memstore authors" in text


def test_changelog_has_unreleased_and_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text
    assert f"## [{PROJECT['version']}] - " in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Another table's version line first, and TOML's single-quoted string.
        ('[tool.x]\nversion = "9.9"\n[project]\nname = "memstore"\nversion = \'1.2.3\'\n', "1.2.3"),
        # A pyproject that is not memstore's (memstore vendored into another tree).
        ('[project]\nname = "other"\nversion = "4.5.6"\n', None),
        # Broken TOML, or no version at all.
        ('[project\nversion = "1"\n', None),
        ('[project]\nname = "memstore"\ndynamic = ["version"]\n', None),
    ],
    ids=["other-table-first", "not-memstore", "broken-toml", "no-version"],
)
def test_pyproject_fallback_reads_toml(tmp_path: Path, text: str, expected: str | None) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(text, encoding="utf-8")
    assert version_module.version_from_pyproject(pyproject) == expected
