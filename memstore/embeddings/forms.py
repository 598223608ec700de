"""Query and document forms: the instructions asymmetric embedding models expect.

Kept apart from the embedders so every embedder (local or behind an API) names its
forms in its identity the same way.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

from memstore.core.model_spec import EMBEDDER

__all__ = ["drops_forms", "form_options", "instruction_prefixes", "recorded_forms", "with_forms"]

# The query and document instructions each family was trained with (model cards), keyed
# by a fragment of the model's name. Models not named here (MiniLM, mpnet, gte) read both
# sides as they are. bge's v1.5 and arctic's cards put the instruction on queries only.
_RETRIEVAL = "Represent this sentence for searching relevant passages: "
_PREFIXES = (
    ("nomic-embed", ("search_query: ", "search_document: ")),
    ("e5-", ("query: ", "passage: ")),
    ("bge-", (_RETRIEVAL, "")),
    ("mxbai-embed", (_RETRIEVAL, "")),
    ("arctic-embed", (_RETRIEVAL, "")),
)
# Families whose names match above but that take no instruction: bge-m3, e5's
# instruction-tuned LLM variant (its prompt is a task description, name it yourself).
_NO_PREFIX = ("bge-m3", "e5-mistral")


def instruction_prefixes(model: str | Path | None) -> tuple[str, str]:
    """``(query_prefix, document_prefix)`` of the model's family, else ``("", "")``.

    ``model`` is a hub name or a directory; its last component names the family.
    """
    name = Path(str(model)).name.lower() if model is not None else ""
    if any(fragment in name for fragment in _NO_PREFIX):
        return "", ""
    for fragment, prefixes in _PREFIXES:
        if fragment in name:
            return prefixes
    return "", ""


def with_forms(identity: str, query_prefix: str, document_prefix: str) -> str:
    """``identity`` naming the query and document prefixes, when there are any.

    Vectors of prefixed texts are not comparable with unprefixed ones, so the forms are
    part of the embedder's identity; no prefixes leaves it as it was (databases made
    before forms existed keep opening).
    """
    if not query_prefix and not document_prefix:
        return identity
    return f"{identity} query={query_prefix!r} document={document_prefix!r}"


_QUOTED = r"'(?:[^'\\]|\\.)*'" + r"|" + r'"(?:[^"\\]|\\.)*"'
_FORMS = re.compile(rf" query=(?P<query>{_QUOTED}) document=(?P<document>{_QUOTED})\Z", re.S)
_INPUT_TYPE = re.compile(r"(?P<prefix>.*?)(?:<input_type=(?P<input_type>[^>]*)>)?\Z", re.S)


def recorded_forms(identity: str | None) -> tuple[str, str] | None:
    """The ``(query, document)`` forms :func:`with_forms` put in ``identity``; None when
    it names none."""
    match = _FORMS.search(identity or "")
    if match is None:
        return None
    try:
        query, document = ast.literal_eval(match["query"]), ast.literal_eval(match["document"])
    except (ValueError, SyntaxError):
        return None
    return (query, document) if isinstance(query, str) and isinstance(document, str) else None


def drops_forms(recorded: str | None, identity: str) -> bool:
    """Whether an embedder named ``identity`` has no forms where ``recorded`` has some."""
    return recorded_forms(recorded) is not None and recorded_forms(identity) is None


def form_options(identity: str | None) -> str:
    """The command-line options that give an embedder the forms ``identity`` records
    (``--embedder-query-input-type query ...``); empty when it records none."""
    forms = recorded_forms(identity)
    if forms is None:
        return ""
    options: list[str] = []
    for side, form in zip(("query", "document"), forms, strict=True):
        match = _INPUT_TYPE.match(form)
        assert match is not None  # the pattern matches any text
        if match["prefix"]:
            options += [EMBEDDER.flag(f"{side}_prefix"), shlex.quote(match["prefix"])]
        if match["input_type"]:
            options += [EMBEDDER.flag(f"{side}_input_type"), shlex.quote(match["input_type"])]
    return " ".join(options)
