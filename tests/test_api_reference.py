"""The API reference shows every public method and property, with its signature and docstring.

One ``mkdocs build --strict`` (the docs extra) per test session into a private directory;
then each public name (``public_members``: not starting with ``_``, inherited ones
included) of every class of ``REFERENCE`` must have its heading on its page, a method's
rendered signature must name each of its parameters, and its docstring's first words must
be there. A class added to the public API is one line of ``REFERENCE``.
"""

from __future__ import annotations

import html
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import ROOT

from memstore.sync import public_members
from tests.test_private_core import FACADE_API

pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra builds the site")

# (page of the site, the identifier its ``:::`` block documents)
REFERENCE = [
    ("api/store", "memstore.MemoryStore"),
    ("api/tenant", "memstore.TenantMemory"),
    ("api/tenant", "memstore.TenantThreads"),
    ("api/threads", "memstore.ThreadBuffer"),
    ("api/threads", "memstore.WorkingMemory"),
    ("api/sync", "memstore.SyncMemoryStore"),
    ("api/sync", "memstore.sync.SyncTenantMemory"),
    ("api/sync", "memstore.sync.SyncTenantThreads"),
    ("api/sync", "memstore.sync.SyncThreadBuffer"),
    ("api/sync", "memstore.sync.SyncWorkingMemory"),
]

_ROLE = re.compile(r":(?:py:)?[a-z]+:`~?([^`]+)`")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def _class(identifier: str) -> type:
    module, _, name = identifier.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type)
    return cls


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _section(page: str, anchor: str) -> str | None:
    """The HTML from the heading ``anchor`` to the next heading."""
    start = page.find(f'id="{anchor}"')
    if start < 0:
        return None
    end = page.find('class="doc doc-heading"', page.find("</h", start))
    return page[start : end if end > 0 else len(page)]


def _parameters(cls: type, name: str) -> list[str]:
    """The parameters a caller passes (a bound classmethod has no ``cls`` left)."""
    params = list(inspect.signature(getattr(cls, name)).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [p.name for p in params]


def _first_words(doc: str) -> str:
    line = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], doc.strip().split("\n")[0])
    words = line.replace("`", "").replace("*", "").split()
    return " ".join(words[:4])


def _problems(site: Path, page_name: str, identifier: str) -> list[str]:
    page = (site / page_name / "index.html").read_text(encoding="utf-8")
    cls = _class(identifier)
    problems = []
    for name, member in sorted(public_members(cls).items()):
        where = f"{identifier}.{name}"
        section = _section(page, where)
        if section is None:
            problems.append(f"{where}: no heading on {page_name}")
            continue
        obj = getattr(cls, name)
        doc = inspect.getdoc(obj)
        if not isinstance(member, property) and callable(obj):
            signature = section[section.find("<code>", section.find("doc-signature")) :]
            shown = _text(signature[: signature.find("</code>")])
            missing = [p for p in _parameters(cls, name) if not re.search(rf"\b{p}\b", shown)]
            if missing:
                problems.append(f"{where}: signature lacks {missing}: {shown[:120]}")
        if doc and _first_words(doc) not in _text(section):
            problems.append(f"{where}: docstring {_first_words(doc)!r} not rendered")
    return problems


def test_the_facades_allow_list_is_rendered(site: Path) -> None:
    """Each public name of the facade (tests/test_private_core.py), attributes included."""
    page = (site / "api/store" / "index.html").read_text(encoding="utf-8")
    missing = [n for n in sorted(FACADE_API) if _section(page, f"memstore.MemoryStore.{n}") is None]
    assert missing == []


@pytest.mark.parametrize(("page", "identifier"), REFERENCE, ids=[i for _, i in REFERENCE])
def test_every_public_name_is_rendered_with_its_signature(
    site: Path, page: str, identifier: str
) -> None:
    assert _problems(site, page, identifier) == []


def test_readme_sections_on_the_site(site: Path) -> None:
    home = _text((site / "index.html").read_text(encoding="utf-8"))
    # The model-choice table and the live-memory overview, from README.md's own text.
    assert "multilingual-e5-small 4-bit" in home
    assert "A process can sleep until another one commits" in home
