"""Keyword expansion by word vectors: a query word also searches the tenant's words near it.

"What activities does Melanie partake in?" finds by BM25 only the turns that
say "activities"; the turns about pottery and camping hold none of its words.
With expansion each query word adds the tenant's own words whose vectors (the
store's embedder, each word embedded alone) are nearest to its own, as extra
BM25 terms weighted by their cosine, so those turns become keyword candidates.

Where the vectors come from: the tenant's vocabulary (the words of its
episodes, memstore/search/vocabulary.py) embedded word by word, held in this
process per tenant and never stored: ``forget`` drops the tenant here as it
does the SQLite vector cache, and no row of the database derives from it. A
tenant's words are embedded once; after a write only the new words are.
Query words the vocabulary lacks are embedded with the query, in one call.
The vocabulary is re-read when the tenant's search version changes (SQLite)
or after ``ttl`` seconds (Postgres, which keeps no version).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from memstore.core.lexical import stem
from memstore.core.tenancy import TenantId
from memstore.core.text import keyword_tokens
from memstore.db.unit import Database
from memstore.embeddings.base import Embedder, embed_checked
from memstore.search.tuning import RecallTuning
from memstore.search.vocabulary import search_version, tenant_words

__all__ = ["Expanded", "KeywordExpansion"]


@dataclass(frozen=True)
class _Vocabulary:
    version: int | None
    taken: float
    words: list[str]
    index: dict[str, int]
    matrix: np.ndarray  # unit vectors, one row per word


@dataclass(frozen=True)
class Expanded:
    """A query's vector, its terms and their BM25 weights (its own first, at 1)."""

    qvec: np.ndarray
    terms: tuple[str, ...]
    weights: tuple[float, ...]


class KeywordExpansion:
    """Per-tenant word vectors and the expansion of a query's terms with them."""

    def __init__(
        self, *, db: Database, embedder: Embedder, ttl: float = 60.0, max_words: int = 500_000
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.ttl = ttl
        self.max_words = max_words  # over all cached tenants; least recently used go first
        self._tenants: OrderedDict[str, _Vocabulary] = OrderedDict()

    def drop(self, user_id: str) -> None:
        self._tenants.pop(user_id, None)

    async def _vocabulary(self, user_id: TenantId) -> _Vocabulary:
        cached = self._tenants.get(user_id)
        fresh_enough = cached is not None and time.monotonic() - cached.taken < self.ttl
        async with self.db.read(user_id) as session:
            version = await search_version(session, user_id)
            if cached is not None and (
                (version is not None and version == cached.version)
                or (version is None and fresh_enough)
            ):
                self._tenants.move_to_end(user_id)
                return cached
            words = sorted(await tenant_words(session, user_id))
        dim = int(self.embedder.dim)
        matrix = np.zeros((len(words), dim), dtype=np.float32)
        new = [i for i, w in enumerate(words) if cached is None or w not in cached.index]
        if cached is not None:
            for i, w in enumerate(words):
                j = cached.index.get(w)
                if j is not None:
                    matrix[i] = cached.matrix[j]
        if new:
            matrix[new] = await embed_checked(self.embedder, [words[i] for i in new])
        vocabulary = _Vocabulary(
            version, time.monotonic(), words, {w: i for i, w in enumerate(words)}, matrix
        )
        self.drop(user_id)
        self._tenants[user_id] = vocabulary
        while sum(len(v.words) for v in self._tenants.values()) > self.max_words:
            self._tenants.popitem(last=False)
        return vocabulary

    async def expand(
        self, user_id: TenantId, query: str, terms: tuple[str, ...], tuning: RecallTuning
    ) -> Expanded:
        vocabulary = await self._vocabulary(user_id)
        words = keyword_tokens(query)
        unknown = [w for w in words if w not in vocabulary.index]
        vectors = await embed_checked(self.embedder, [query, *unknown])
        own = {w: vectors[1 + i] for i, w in enumerate(unknown)}
        weights: dict[str, float] = dict.fromkeys(terms, 1.0)
        if not vocabulary.words:
            return Expanded(vectors[0], terms, tuple(weights.values()))
        rows = [
            vocabulary.matrix[vocabulary.index[w]] if w in vocabulary.index else own[w]
            for w in words
        ]
        # einsum, not ``@``: on a busy machine a multi-threaded BLAS call waited for
        # its threads far longer than its arithmetic took (6-16 ms against 2).
        sims = np.einsum("ij,kj->ik", np.stack(rows), vocabulary.matrix)
        # The query's own terms and the ``expansion`` best words of each query word
        # are among its best ``len(terms) + expansion`` (a term stems several words:
        # a few more are looked at).
        best = min(sims.shape[1], 2 * (len(terms) + tuning.expansion))
        for word, row in zip(words, sims, strict=True):
            top = np.argpartition(-row, best - 1)[:best]
            top = top[np.argsort(-row[top], kind="stable")]
            taken = 0
            for i in top.tolist():
                cosine = float(row[i])
                if taken >= tuning.expansion or cosine < tuning.expansion_cosine:
                    break
                term = stem(vocabulary.words[i])
                if weights.get(term, 0.0) >= 1.0 or term == stem(word):
                    continue  # the query's own term, at full weight already
                weights[term] = max(weights.get(term, 0.0), tuning.expansion_weight * cosine)
                taken += 1
        return Expanded(vectors[0], tuple(weights), tuple(weights.values()))
