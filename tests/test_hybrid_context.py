"""Hybrid recall's context terms against its own parts, on a corpus built for it.

A session with two strong hits lifts every turn in it (the session term). The
lift is bounded by the turn's own score: otherwise the session's filler turns,
which match no query word and are only loosely similar, outrank a turn of
another session that the keyword side alone ranks among the best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from memstore import Episode, MemoryStore
from memstore.embeddings import HashingEmbedder
from memstore.recall import RecallTuning

DIM = 384
T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUERY = "quokka"


class ChosenEmbedder:
    """Each text of the corpus embeds to the vector chosen for it; others to a hash."""

    dim = DIM

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.fallback = HashingEmbedder(DIM)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.fallback.embed_sync(texts)
        for i, t in enumerate(texts):
            if t in self.vectors:
                out[i] = self.vectors[t]
        return out


def _corpus() -> tuple[list[Episode], dict[str, np.ndarray], str]:
    """Session ``on`` holds two strong hits and filler; ``off`` one keyword-only hit."""
    rng = np.random.default_rng(7)
    axis = np.zeros(DIM, dtype=np.float32)
    axis[0] = 1.0

    def near(cosine: float) -> np.ndarray:
        noise = rng.standard_normal(DIM).astype(np.float32)
        noise[0] = 0.0
        noise /= np.linalg.norm(noise)
        v = cosine * axis + np.sqrt(1 - cosine**2) * noise
        return (v / np.linalg.norm(v)).astype(np.float32)

    sessions: list[tuple[str, list[tuple[str, float]]]] = [
        (
            "on",
            [
                ("the quokka at the zoo smiled at us", 0.5),
                ("we fed the quokka some leaves", 0.5),
                # two turns apart: the filler is lifted by the session, not as a neighbour
                ("then we drove back", -0.2),
                ("and unpacked the car", -0.2),
                *((f"the weather on our trip was mild, day {i}", 0.12) for i in range(6)),
            ],
        ),
        (
            "off",
            [
                ("my cousin keeps a photo of a quokka on her desk", 0.05),
                *((f"her desk faces the window, note {i}", 0.0) for i in range(3)),
            ],
        ),
        *(
            (f"other{s}", [(f"errand {s}-{i} in town", -0.2 + 0.05 * i) for i in range(8)])
            for s in range(6)
        ),
        # Weaker keyword matches (one mention in a long text), so that the hit above
        # is not the weakest match, which the keyword side ranks level with no match.
        (
            "long",
            [
                ("a long list of chores: " + "laundry, dishes, " * 12 + "a quokka", 0.0),
                ("a long list of errands: " + "post office, bank, " * 12 + "a quokka", 0.0),
            ],
        ),
    ]
    vectors = {QUERY: axis}
    rows: list[Episode] = []
    for session, turns in sessions:
        for text, cosine in turns:
            vectors[text] = near(cosine)
            rows.append(
                Episode(
                    user_id="u",
                    session_id=session,
                    input=text,
                    occurred_at=T0 + timedelta(minutes=len(rows)),
                )
            )
    return rows, vectors, "my cousin keeps a photo of a quokka on her desk"


async def test_a_session_does_not_lift_its_filler_over_another_sessions_hit(db_url: str) -> None:
    rows, vectors, evidence = _corpus()
    embedder = ChosenEmbedder(vectors)
    shipped = RecallTuning()
    keyword_only = replace(shipped, dense_weight=0.0, neighbour_weight=0.0, session_weight=0.0)
    async with MemoryStore.open(db_url, embedder=embedder, recall_tuning=keyword_only) as store:
        await store.remember_many(rows)
        alone = [m.input for m in await store.recall(QUERY, user_id="u", limit=3)]
    # The keyword side alone ranks the other session's hit among the first three.
    assert evidence in alone
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        hybrid = await store.recall_scored(QUERY, user_id="u", limit=3)
    found = [m.episode.input for m in hybrid]
    assert evidence in found, [(m.episode.input, m.parts) for m in hybrid]
    # Every part of the ranking is reported: the session lift is what was added.
    for m in hybrid:
        total = m.parts["fused"] + m.parts["neighbour"] + m.parts["session"]
        assert abs(total - m.parts["ranking"]) < 1e-9
