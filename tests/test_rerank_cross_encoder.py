"""CrossEncoderReranker: a real cross-encoder, loaded from a directory, orders recall.

The model is built by the test (tests/rerank_models.py) and loaded through
``CrossEncoderReranker``'s own loading code; the expected order is the model's
scores computed with transformers alone, beside the store.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")

from rerank_models import build_cross_encoder, model_logits
from test_rerank import T0, TEXTS

from memstore import ConfigurationError, Episode, MemoryStore
from memstore.core.model_spec import ModelSpec
from memstore.recall.rerank import episode_rerank_text
from memstore.rerankers import CrossEncoderReranker

QUERY = "when does the flight to Lisbon leave"


@pytest.fixture(scope="module")
def model_dir() -> Iterator[Path]:
    directory = build_cross_encoder()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def reranker(model_dir: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(model_dir)


async def test_scores_are_the_models(model_dir: Path, reranker: CrossEncoderReranker) -> None:
    logits = model_logits(model_dir, QUERY, TEXTS)
    scores = await reranker.rerank(QUERY, TEXTS)
    # sentence-transformers puts a one-output model's logit through a sigmoid.
    assert scores == pytest.approx([1 / (1 + math.exp(-x)) for x in logits], abs=1e-5)
    assert len({round(s, 4) for s in scores}) == len(scores)  # the order is not a tie-break
    assert reranker.identity == f"cross-encoder:{model_dir.name}"
    assert await reranker.rerank(QUERY, []) == []


async def test_recall_follows_the_models_order(
    db_url: str, model_dir: Path, reranker: CrossEncoderReranker
) -> None:
    async with MemoryStore.open(db_url, reranker=reranker, rerank_candidates=6) as store:
        await store.remember_many(
            [
                Episode(session_id=f"s{i}", user_id="alice", input=t, occurred_at=T0)
                for i, t in enumerate(TEXTS)
            ]
        )
        got = await store.recall_scored(QUERY, user_id="alice", limit=6)
        plain = await store.recall_scored(QUERY, user_id="alice", limit=6, rerank=False)
    texts = [episode_rerank_text(m.episode) for m in got]
    logits = model_logits(model_dir, QUERY, texts)
    assert logits == sorted(logits, reverse=True)
    assert [m.parts["rerank"] for m in got] == sorted(
        (m.parts["rerank"] for m in got), reverse=True
    )
    assert [m.episode.id for m in got] != [m.episode.id for m in plain]


def test_a_model_with_several_outputs_is_refused() -> None:
    directory = build_cross_encoder(labels=3)
    try:
        with pytest.raises(ConfigurationError, match="num_labels=1"):
            CrossEncoderReranker(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


async def test_a_reranker_named_by_the_environment_orders_recall(
    db_url: str, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same names as the embedder's: MEMSTORE_RERANKER and its _MODEL.
    monkeypatch.setenv("MEMSTORE_RERANKER", "cross-encoder")
    monkeypatch.setenv("MEMSTORE_RERANKER_MODEL", str(model_dir))
    async with MemoryStore.open(db_url, rerank_candidates=6) as store:
        # open() keeps the reranker it built in the store's options.
        assert store.config.reranker is not None
        assert getattr(store.config.reranker, "identity", None) == (
            f"cross-encoder:{model_dir.name}"
        )
        await store.remember_many(
            [
                Episode(session_id=f"s{i}", user_id="alice", input=t, occurred_at=T0)
                for i, t in enumerate(TEXTS)
            ]
        )
        got = await store.recall_scored(QUERY, user_id="alice", limit=6)
    assert all("rerank" in m.parts for m in got)
    logits = model_logits(model_dir, QUERY, [episode_rerank_text(m.episode) for m in got])
    assert logits == sorted(logits, reverse=True)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("colbert", "unknown reranker"),
        (ModelSpec("http", model="m"), "needs a base URL"),
        (ModelSpec("cross-encoder"), "needs a model"),
        (ModelSpec("cross-encoder", model="m", base_url="http://x"), "takes no base URL"),
        (ModelSpec("cross-encoder", model="m", dim=3), "takes no dim"),
    ],
)
async def test_a_bad_reranker_name_opens_nothing(spec: object, message: str) -> None:
    directory = Path(tempfile.mkdtemp(prefix="memstore-rerank-spec-"))
    try:
        with pytest.raises(ConfigurationError, match=message):
            async with MemoryStore.open(f"sqlite+aiosqlite:///{directory}/m.db", reranker=spec):
                pass
        assert os.listdir(directory) == []  # not even the database file
    finally:
        shutil.rmtree(directory, ignore_errors=True)
