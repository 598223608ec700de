"""The installed memstore version, for ``memstore.__version__`` and ``memstore --version``."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["UNKNOWN_VERSION", "__version__", "read_version", "version_from_pyproject"]

UNKNOWN_VERSION = "0+unknown"
_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def version_from_pyproject(pyproject: Path = _PYPROJECT) -> str | None:
    """The version in a memstore pyproject.toml, or None (unreadable, not memstore's, none)."""
    # A source checkout that was never installed has no package metadata; its
    # pyproject.toml still says which version it is. Parsed as TOML (any quoting,
    # any table order) and only believed when it is memstore's own [project].
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if not isinstance(project, dict):
        return None
    found = project.get("version") if project.get("name") == "memstore" else None
    return found if isinstance(found, str) and found else None


def read_version() -> str:
    """Package metadata, else the source tree's pyproject.toml, else ``0+unknown``."""
    try:
        return version("memstore")
    except PackageNotFoundError:
        return version_from_pyproject() or UNKNOWN_VERSION


__version__ = read_version()
