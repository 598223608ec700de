"""The installed memstore version, for ``memstore.__version__`` and ``memstore --version``."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["UNKNOWN_VERSION", "__version__", "read_version"]

UNKNOWN_VERSION = "0+unknown"


def _from_pyproject() -> str | None:
    # A source checkout that was never installed has no package metadata; its
    # pyproject.toml still says which version it is.
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
    return match.group(1) if match else None


def read_version() -> str:
    """Package metadata, else the source tree's pyproject.toml, else ``0+unknown``."""
    try:
        return version("memstore")
    except PackageNotFoundError:
        return _from_pyproject() or UNKNOWN_VERSION


__version__ = read_version()
