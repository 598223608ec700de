"""Griffe extension for the documentation site: Sphinx cross-reference roles as code.

memstore's docstrings name other objects the Sphinx way (:meth:`open`,
:class:`~memstore.Fact`); mkdocstrings renders Markdown, where such a role would show
as literal text. This turns each role into a code span with the name as written (a
leading ``~`` keeps the last component only, as in Sphinx). mkdocs.yml loads it; the
docstrings themselves stay unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

__all__ = ["SphinxRoles", "plain_roles"]

_ROLE = re.compile(r":(?:py:)?(?:meth|class|func|attr|exc|data|mod|obj|const):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    def code(match: re.Match[str]) -> str:
        name = match.group(2)
        return f"`{name.rsplit('.', 1)[-1] if match.group(1) else name}`"

    return _ROLE.sub(code, text)


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
