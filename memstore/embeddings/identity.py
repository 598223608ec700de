"""A stable name for an embedder's vector space, recorded in the database."""

from __future__ import annotations

from memstore.core.validation import check_identifier

__all__ = ["MAX_IDENTITY_CHARS", "embedder_identity"]

MAX_IDENTITY_CHARS = 500


def embedder_identity(embedder: object) -> str:
    """The embedder's ``identity`` attribute, else its class's qualified name.

    Two embedders with the same identity must produce comparable vectors. The
    built-in embedders define ``identity``; an embedder without one (``None``
    or no attribute) is named by its class (``module.Class``), which cannot
    tell apart two models behind one class: give such a class an ``identity``
    naming its model. A declared identity that is not a non-empty string of at
    most 500 characters without control characters is :class:`InvalidInput`.
    """
    value = getattr(embedder, "identity", None)
    if value is None:
        kind = type(embedder)
        return f"{kind.__module__}.{kind.__qualname__}"[:MAX_IDENTITY_CHARS]
    return check_identifier("embedder.identity", value, max_chars=MAX_IDENTITY_CHARS).strip()
