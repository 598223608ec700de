"""The Embedder protocol and the checks every produced vector goes through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memstore.errors import DimensionMismatch, InvalidInput

__all__ = ["DEFAULT_DIM", "EMBED_BATCH", "EmbedOutput", "Embedder", "embed_checked", "normalized"]

# all-MiniLM-L6-v2's width; also the default width of the hashing embedder, so
# a database migrated with defaults accepts either.
DEFAULT_DIM = 384
# Texts per embed() call: bounds memory for large remember_many batches.
EMBED_BATCH = 64


# A list of float lists or a 2-D numpy array, one row per text.
EmbedOutput = Sequence[Sequence[float]] | npt.NDArray[Any]


@runtime_checkable
class Embedder(Protocol):
    """Anything with a fixed output width and an async batched ``embed``."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> EmbedOutput: ...


def normalized(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero), so dot product = cosine."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


async def embed_checked(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed ``texts`` in batches; refuse wrong widths and NaN/inf before anything is stored."""
    dim = int(embedder.dim)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = list(texts[start : start + EMBED_BATCH])
        vectors = await embedder.embed(chunk)
        try:
            block = np.asarray(vectors, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(
                f"the embedder returned something that is not numbers: {exc}"
            ) from exc
        if block.ndim != 2 or block.shape[0] != len(chunk):
            raise InvalidInput(f"the embedder returned shape {block.shape} for {len(chunk)} texts")
        if block.shape[1] != dim:
            raise DimensionMismatch(
                f"the embedder returned vectors of dimension {block.shape[1]}; "
                f"it declares (and the store uses) {dim}"
            )
        if not np.isfinite(block).all():
            raise InvalidInput("the embedder returned NaN or infinite values")
        out[start : start + len(chunk)] = block
    return normalized(out)
