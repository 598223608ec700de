"""Code blocks of README.md and the documentation pages (docs/), for the tests that run them.

The README keeps the API tour; the other examples live on the docs pages. Tests read
them from there, so every block a reader copies is one a test runs.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ROOT", "code_blocks", "section"]

ROOT = Path(__file__).resolve().parents[1]
_HEADING = re.compile(r"(#{1,6}) ")


def section(page: str, heading: str | None = None) -> str:
    """The text of ``page`` (relative to the checkout), or of the section whose heading
    line starts with ``heading`` (e.g. ``"## LangGraph store"``), up to the next heading of
    the same or a higher level. Lines inside code fences are never headings."""
    lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
    if heading is None:
        return "\n".join(lines)
    level = len(heading) - len(heading.lstrip("#"))
    found: list[str] | None = None
    fence = False
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        match = None if fence else _HEADING.match(line)
        if found is None:
            if match and line.startswith(heading):
                found = [line]
        elif match and len(match.group(1)) <= level:
            break
        else:
            found.append(line)
    assert found is not None, f"{page} has no heading {heading!r}"
    return "\n".join(found)


def code_blocks(page: str, lang: str = "python", heading: str | None = None) -> list[str]:
    """The ``lang`` fenced blocks of ``page`` (or of one of its sections), in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", section(page, heading), re.S | re.M)
