"""The Embedder protocol and the checks every produced vector goes through."""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memstore.errors import ConfigurationError, DimensionMismatch, InvalidInput
from memstore.telemetry import model_call

__all__ = [
    "DEFAULT_DIM",
    "EMBED_BATCH",
    "MAX_DIM",
    "MIN_DIM",
    "EmbedOutput",
    "Embedder",
    "Fixed",
    "JointPassageEmbedder",
    "PassageEmbedder",
    "QueryEmbedder",
    "check_dim",
    "embed_checked",
    "embed_with_passages_checked",
    "normalized",
    "passages_checked",
    "queries_checked",
    "width_or_none",
]

# all-MiniLM-L6-v2's width; also the default width of the hashing embedder, so
# a database migrated with defaults accepts either.
DEFAULT_DIM = 384
# The widths a store takes, the same on both backends: pgvector's HNSW index, which
# memstore builds on episodes.embedding (backends/postgresql/indexes.py), takes at
# most 2,000 dimensions, and migration 0003 fixes the width within these bounds. SQLite
# could hold wider blobs, but a dump must load into either backend and every recorded
# width must be one ``MemoryStore.open`` can build an embedder for.
MIN_DIM = 1
MAX_DIM = 2000
# Texts per embed() call: bounds memory for large remember_many batches.
EMBED_BATCH = 64


def width_or_none(value: object) -> int | None:
    """``value`` if it is a width a store takes (:data:`MIN_DIM` to :data:`MAX_DIM`), else None."""
    try:
        # Any integer (numpy's too), never a bool or a float.
        dim = None if isinstance(value, bool) else operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None
    return dim if dim is not None and MIN_DIM <= dim <= MAX_DIM else None


def check_dim(value: object, *, what: str, setting: str = "embedder") -> int:
    """``value`` if it is a width a store takes (:data:`MIN_DIM` to :data:`MAX_DIM`),
    else :class:`ConfigurationError` naming ``what`` and ``setting``."""
    dim = width_or_none(value)
    if dim is None:
        raise ConfigurationError(
            f"{what} must be an integer from {MIN_DIM} to {MAX_DIM} (the widest vector "
            f"pgvector's HNSW index takes; memstore uses the same bound on SQLite), "
            f"got {value!r}",
            setting=setting,
        )
    return dim


# A list of float lists or a 2-D numpy array, one row per text.
EmbedOutput = Sequence[Sequence[float]] | npt.NDArray[Any]


class Fixed:
    """An embedder's width and identity, both fixed when it is made (vectors are stored)."""

    _dim: int
    _identity: str

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def identity(self) -> str:
        """What the database records as this embedder; never a key."""
        return self._identity


@runtime_checkable
class Embedder(Protocol):
    """Anything with a fixed output width and an async batched ``embed``."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> EmbedOutput: ...


@runtime_checkable
class PassageEmbedder(Embedder, Protocol):
    """An embedder that can also embed a long text passage by passage.

    ``embed_passages`` gives, per text, one vector per passage (overlapping
    slices the model reads whole), or no rows for a text that is one passage.
    Recall then scores an episode by its best passage as well as by its
    whole-text vector.
    """

    async def embed_passages(self, texts: Sequence[str]) -> Sequence[EmbedOutput]: ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An embedder whose model reads search queries in another form than stored text.

    Asymmetric models are trained with an instruction on each side (e5's ``query: `` /
    ``passage: ``, nomic's ``search_query: `` / ``search_document: ``, bge's
    "Represent this sentence for searching relevant passages: "); a query embedded
    like a document loses recall (-0.021 recall@10 on the LoCoMo dev set with
    multilingual-e5-small). ``embed`` is the document form, used for everything that
    is stored; ``embed_queries`` the query form, used for every text recall searches
    with. An embedder without it embeds queries with ``embed``. Its ``identity``
    must name the forms, so a database embedded with them refuses one without.
    """

    async def embed_queries(self, texts: Sequence[str]) -> EmbedOutput: ...


@runtime_checkable
class JointPassageEmbedder(PassageEmbedder, Protocol):
    """A passage embedder that gives whole-text vectors and passages in one pass.

    ``embed_with_passages`` returns what ``embed`` and ``embed_passages`` would,
    for the cost of one: writers that need both (``remember_many``, ``reembed``)
    call it so a long text's word pieces go through the model once, not twice.
    """

    async def embed_with_passages(
        self, texts: Sequence[str]
    ) -> tuple[EmbedOutput, Sequence[EmbedOutput]]: ...


def _checked_block(block: Any, dim: int, rows: int | None) -> npt.NDArray[np.float64]:
    try:
        array = np.asarray(block, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"the embedder returned something that is not numbers: {exc}") from exc
    if array.size == 0 and rows is None:
        return np.zeros((0, dim))
    if array.ndim != 2 or (rows is not None and array.shape[0] != rows):
        wanted = f"{rows} texts" if rows is not None else "one text's passages"
        raise InvalidInput(f"the embedder returned shape {array.shape} for {wanted}")
    if array.shape[1] != dim:
        raise DimensionMismatch(
            f"the embedder returned vectors of dimension {array.shape[1]}; "
            f"it declares (and the store uses) {dim}"
        )
    if not np.isfinite(array).all():
        raise InvalidInput("the embedder returned NaN or infinite values")
    return array


async def passages_checked(
    embedder: Embedder, texts: Sequence[str]
) -> list[npt.NDArray[np.float32] | None]:
    """Per text, its passages' unit vectors, or None (one passage, or an embedder without
    :class:`PassageEmbedder`); checked like :func:`embed_checked`."""
    if not isinstance(embedder, PassageEmbedder):
        return [None] * len(texts)
    dim = int(embedder.dim)
    out: list[npt.NDArray[np.float32] | None] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = list(texts[start : start + EMBED_BATCH])
        with model_call("embeddings", embedder, len(chunk)):
            found = list(await embedder.embed_passages(chunk))
        if len(found) != len(chunk):
            raise InvalidInput(
                f"the embedder returned passages for {len(found)} of {len(chunk)} texts"
            )
        out.extend(_passage_block(block, dim) for block in found)
    return out


def _passage_block(block: Any, dim: int) -> npt.NDArray[np.float32] | None:
    array = _checked_block(block, dim, None)
    return normalized(array.astype(np.float32)) if len(array) > 1 else None


async def embed_with_passages_checked(
    embedder: Embedder, texts: Sequence[str]
) -> tuple[npt.NDArray[np.float32], list[npt.NDArray[np.float32] | None]]:
    """:func:`embed_checked` and :func:`passages_checked` of ``texts``, checked alike.

    One call per batch for a :class:`JointPassageEmbedder` (each word piece
    embedded once); two for any other embedder.
    """
    if not isinstance(embedder, JointPassageEmbedder):
        return await embed_checked(embedder, texts), await passages_checked(embedder, texts)
    dim = int(embedder.dim)
    vectors = np.zeros((len(texts), dim), dtype=np.float32)
    passages: list[npt.NDArray[np.float32] | None] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = list(texts[start : start + EMBED_BATCH])
        with model_call("embeddings", embedder, len(chunk)):
            whole, found = await embedder.embed_with_passages(chunk)
        vectors[start : start + len(chunk)] = _checked_block(whole, dim, len(chunk))
        found = list(found)
        if len(found) != len(chunk):
            raise InvalidInput(
                f"the embedder returned passages for {len(found)} of {len(chunk)} texts"
            )
        passages.extend(_passage_block(block, dim) for block in found)
    return normalized(vectors), passages


def normalized(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero), so dot product = cosine."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


async def _checked(
    dim: int, embed: Callable[[Sequence[str]], Awaitable[EmbedOutput]], texts: Sequence[str]
) -> npt.NDArray[np.float32]:
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = list(texts[start : start + EMBED_BATCH])
        # The model behind a bound method (embedder.embed / embed_queries).
        with model_call("embeddings", getattr(embed, "__self__", embed), len(chunk)):
            block = _checked_block(await embed(chunk), dim, len(chunk))
        out[start : start + len(chunk)] = block
    return normalized(out)


async def embed_checked(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed ``texts`` in batches; refuse wrong widths and NaN/inf before anything is stored."""
    return await _checked(int(embedder.dim), embedder.embed, texts)


async def queries_checked(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed search queries: in the query form of a :class:`QueryEmbedder`, else as
    :func:`embed_checked` does; checked the same way."""
    if isinstance(embedder, QueryEmbedder):
        return await _checked(int(embedder.dim), embedder.embed_queries, texts)
    return await embed_checked(embedder, texts)
