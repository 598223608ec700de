"""Embeddings for rows that arrive without one (imports), from the same texts as every writer."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from memstore.core.documents import episode_text, fact_text
from memstore.core.langgraph_input import indexed_texts
from memstore.embeddings.base import Embedder, embed_checked, passages_checked
from memstore.errors import InvalidImportRow
from memstore.types import Episode, Fact

__all__ = ["EMBEDDED_TABLES", "fill_embeddings"]

EMBEDDED_TABLES = frozenset({"episodes", "facts", "langgraph_items"})


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
    embedder: Embedder,
    table: str,
    rows: Sequence[Any],
    *,
    recompute: bool = False,
    start: int = 0,
) -> list[Any]:
    """``rows`` with an embedding computed by ``embedder`` where they have none.

    Episode rows also get their passages (:func:`passages_checked`), which
    dumps never carry. LangGraph items get the vectors of their indexed fields.

    ``recompute`` replaces every embedding (the rows were embedded by another
    embedder, whose vectors would not be comparable with this store's). Rows of
    tables without embeddings, and rows that are not mappings, pass unchanged.
    ``start`` is the position of ``rows[0]`` among its table's rows (for errors).
    """
    if table not in EMBEDDED_TABLES:
        return list(rows)
    if table == "langgraph_items":
        return await _fill_item_vectors(embedder, rows, recompute=recompute, start=start)
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


async def _fill_item_vectors(
    embedder: Embedder, rows: Sequence[Any], *, recompute: bool, start: int
) -> list[Any]:
    """LangGraph items with the vectors of their indexed fields, as ``MemstoreStore`` puts them.

    Dumps carry an item's vectors (base64) and fields; the vectors are computed
    anew where they are missing, or made by another embedder (``recompute``).
    """
    out = list(rows)
    todo: list[tuple[int, list[str]]] = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            continue
        fields, value = row.get("index_fields"), row.get("value")
        if fields is None:
            if recompute and row.get("vectors") is not None:
                raise InvalidImportRow(
                    "langgraph_items",
                    start + index,
                    "vectors",
                    "were made by another embedder than this store's, and the item "
                    "records no indexed fields to compute them again from (it was "
                    "indexed before migration 0012); import the dump into a store with "
                    "the embedder that made it, or remove the row's vectors",
                )
            continue
        if row.get("vectors") is not None and not recompute:
            continue
        if not (
            isinstance(value, Mapping)
            and isinstance(fields, list)
            and fields
            and all(isinstance(f, str) and f for f in fields)
        ):
            continue  # refused with its position by the row checks
        todo.append((index, indexed_texts(value, fields)))
    texts = [t for _, item in todo for t in item]
    matrix = await embed_checked(embedder, texts) if texts else None
    at = 0
    for index, item in todo:
        if not item or matrix is None:  # nothing to index: stored unindexed, as a put does
            out[index] = {**out[index], "vectors": None, "index_fields": None}
            continue
        blob = matrix[at : at + len(item)].astype("<f4").tobytes()
        at += len(item)
        out[index] = {**out[index], "vectors": base64.b64encode(blob).decode()}
    return out
