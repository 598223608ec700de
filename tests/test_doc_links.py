"""Every relative link of README.md and the documentation pages points at something there.

``mkdocs build --strict`` (in .ci/run) checks the links between pages of the site; this
also covers the README, which the site does not build, and runs in any test selection.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from doc_blocks import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# [text](target) and ![alt](target), outside code: the target up to a space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SNIPPET = re.compile(r'^--8<-- "([^":]+)(?::([\w-]+))?"\s*$', re.M)
README_LINES_MAX = 300


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(page: Path) -> set[str]:
    """Heading anchors as MkDocs (toc) and GitHub make them; either form is accepted."""
    found: set[str] = set()
    for line in _prose(page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading is None:
            continue
        title = unicodedata.normalize("NFKD", heading.group(1).replace("`", "")).strip().lower()
        words = re.sub(r"[^\w\s-]", "", title)
        found.add(re.sub(r"[-\s]+", "-", words).strip("-"))  # MkDocs
        found.add(words.replace(" ", "-"))  # GitHub
    return found


def _links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_existing_files(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def test_the_pages_have_links_to_check() -> None:
    # A pattern that stopped matching would make the test above pass on anything.
    readme = _links(ROOT / "README.md")
    assert "docs/guarantees.md" in readme and "docs/SCALING.md#what-the-cluster-showed" in readme


def test_snippets_name_existing_files_and_sections() -> None:
    used = 0
    for page in PAGES:
        for name, part in SNIPPET.findall(page.read_text(encoding="utf-8")):
            used += 1
            source = (ROOT / name).read_text(encoding="utf-8")
            if part:
                assert f"--8<-- [start:{part}]" in source, (page.name, name, part)
                assert f"--8<-- [end:{part}]" in source, (page.name, name, part)
    assert used >= 2  # docs/index.md takes the README's introduction and API tour


def test_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < README_LINES_MAX
