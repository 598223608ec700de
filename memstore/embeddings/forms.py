"""Query and document forms: the instructions asymmetric embedding models expect.

Kept apart from the embedders so every embedder (local or behind an API) names its
forms in its identity the same way.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["instruction_prefixes", "with_forms"]

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
