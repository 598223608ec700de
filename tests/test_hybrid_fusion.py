"""Fusion never loses what one signal alone finds: both signals are standardised over the same rows.

Constructed corpora with chosen vectors: the query's word is matched by one row (or a
few), whose vectors are far from the query's, among rows near the query that do not
contain the word. BM25 alone ranks the matching row first; the fused ranking must keep
it in the top rows, and a row matching a query word must outrank an otherwise equal
row matching none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from memstore import Episode, MemoryStore
from memstore.recall import RecallTuning

DIM = 384
T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUERY = "where did I see the quokka"
KEYWORD_ONLY = replace(RecallTuning(), dense_weight=0.0, neighbour_weight=0.0, session_weight=0.0)


class TableEmbedder:
    """Each known text embeds to its given unit vector."""

    dim = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def _corpus(texts_and_cosines: list[tuple[str, float]]) -> TableEmbedder:
    """Vectors at exactly the given cosine to the query's."""
    rng = np.random.default_rng(7)
    q = _unit(rng.standard_normal(DIM))
    table = {QUERY: q}
    for text, cosine in texts_and_cosines:
        r = rng.standard_normal(DIM)
        r = _unit(r - (r @ q) * q)
        table[text] = _unit(cosine * q + np.sqrt(1 - cosine * cosine) * r)
    return TableEmbedder(table)


async def _ranked(
    url: str, embedder: TableEmbedder, texts: list[str], **open_args: object
) -> list[str]:
    async with MemoryStore.open(url, embedder=embedder, **open_args) as store:  # type: ignore[arg-type]
        found = await store.recall(QUERY, user_id="alice", limit=len(texts))
    return [e.input for e in found]


async def _remember(url: str, embedder: TableEmbedder, texts: list[str]) -> None:
    # One session per row: no neighbour or session context between them; older rows first.
    async with MemoryStore.open(url, embedder=embedder) as store:
        await store.remember_many(
            [
                Episode(
                    user_id="alice",
                    session_id=f"s{i}",
                    input=text,
                    occurred_at=T0 + timedelta(minutes=i),
                )
                for i, text in enumerate(texts)
            ]
        )


async def test_the_only_row_matching_a_query_word_is_not_lost(db_url: str) -> None:
    evidence = "I saw a quokka on Rottnest island"
    rows = [(f"we talked about animals and places, topic {i}", 0.5 + 0.01 * i) for i in range(40)]
    rows.append((evidence, 0.1))
    embedder = _corpus(rows)
    texts = [t for t, _ in rows]
    await _remember(db_url, embedder, texts)
    by_keyword = await _ranked(db_url, embedder, texts, recall_tuning=KEYWORD_ONLY)
    assert by_keyword[0] == evidence  # BM25 alone finds it first
    fused = await _ranked(db_url, embedder, texts)
    assert evidence in fused[:5], fused.index(evidence) + 1


async def test_a_weak_keyword_match_outranks_an_equal_row_matching_nothing(db_url: str) -> None:
    strong = "quokka quokka quokka"
    weak = "a quokka was mentioned once in this much longer sentence about many other things"
    plain = [f"nothing about that animal here, line {i}" for i in range(8)]
    # Every row at the same cosine: only the keyword signal tells them apart. The weak
    # match is the oldest, so a tie with the plain rows would put it last.
    texts = [weak, *plain, strong]
    embedder = _corpus([(t, 0.5) for t in texts])
    await _remember(db_url, embedder, texts)
    fused = await _ranked(db_url, embedder, texts)
    assert fused[:2] == [strong, weak], fused
