"""Embeddings for rows that arrive without one (imports), from the same texts as every writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memstore.documents import episode_text, fact_text
from memstore.embeddings.base import Embedder, embed_checked, passages_checked
from memstore.types import Episode, Fact

__all__ = ["EMBEDDED_TABLES", "fill_embeddings"]

EMBEDDED_TABLES = frozenset({"episodes", "facts"})


def _row_text(table: str, row: Mapping[str, Any]) -> str | None:
    """The embedded text of an exported row, or None when its text columns are malformed.

    Malformed rows are left for the import's validation to refuse with its own
    message; embedding them here would only turn that into a less helpful error.
    """
    if table == "episodes":
        given, said = row.get("input", ""), row.get("output", "")
        if not (isinstance(given, str) and isinstance(said, str)):
            return None
        return episode_text(Episode(session_id="", input=given, output=said))
    subject, predicate, obj = (row.get("subject"), row.get("predicate"), row.get("object"))
    if not (isinstance(subject, str) and isinstance(predicate, str) and isinstance(obj, str)):
        return None
    return fact_text(Fact(subject=subject, predicate=predicate, object=obj))


async def fill_embeddings(
    embedder: Embedder, table: str, rows: Sequence[Any], *, recompute: bool = False
) -> list[Any]:
    """``rows`` with an embedding computed by ``embedder`` where they have none.

    Episode rows also get their passages (:func:`passages_checked`), which
    dumps never carry.

    ``recompute`` replaces every embedding (the rows were embedded by another
    embedder, whose vectors would not be comparable with this store's). Rows of
    tables without embeddings, and rows that are not mappings, pass unchanged.
    """
    if table not in EMBEDDED_TABLES:
        return list(rows)
    todo: list[int] = []
    texts: list[str] = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping) or (row.get("embedding") is not None and not recompute):
            continue
        text = _row_text(table, row)
        if text is not None:
            todo.append(index)
            texts.append(text)
    out = list(rows)
    if todo:
        vectors = await embed_checked(embedder, texts)
        for index, vector in zip(todo, vectors, strict=True):
            out[index] = {**out[index], "embedding": vector.tolist()}
    if table == "episodes":
        out = await _fill_passages(embedder, out, recompute=recompute)
    return out


async def _fill_passages(embedder: Embedder, rows: list[Any], *, recompute: bool) -> list[Any]:
    """Episode rows with their passages computed (dumps do not carry them)."""
    todo: list[int] = []
    texts: list[str] = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping) or row.get("embedding") is None:
            continue
        if row.get("passages") is not None and not recompute:
            continue
        text = _row_text("episodes", row)
        if text is not None:
            todo.append(index)
            texts.append(text)
    if not todo:
        return rows
    passages = await passages_checked(embedder, texts)
    for index, found in zip(todo, passages, strict=True):
        rows[index] = {**rows[index], "passages": None if found is None else found.tolist()}
    return rows
