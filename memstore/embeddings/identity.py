"""A stable name for an embedder's vector space, recorded in the database."""

from __future__ import annotations

__all__ = ["MAX_IDENTITY_CHARS", "embedder_identity"]

MAX_IDENTITY_CHARS = 500


def embedder_identity(embedder: object) -> str:
    """The embedder's ``identity`` attribute, else its class's qualified name.

    Two embedders with the same identity must produce comparable vectors. The
    built-in embedders define ``identity``; an embedder without one is named by
    its class (``module.Class``), which cannot tell apart two models behind one
    class: give such a class an ``identity`` naming its model.
    """
    value = getattr(embedder, "identity", None)
    if isinstance(value, str) and value.strip():
        return value.strip()[:MAX_IDENTITY_CHARS]
    kind = type(embedder)
    return f"{kind.__module__}.{kind.__qualname__}"
