"""HTTPReranker against a real rerank server on 127.0.0.1: Infinity (infinity-emb) serving
the test's own cross-encoder on the Cohere-shaped ``POST /rerank``.

Infinity runs from the directory .ci/run installs it into (``MEMSTORE_TEST_INFINITY_DIR``;
.ci/infinity.txt says why it cannot share the venv), with the venv's torch below it. The
server is started here and stopped in teardown; it is started with an API key, so the
key handling is checked against a server that enforces it.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("httpx")

import httpx
from rerank_models import build_cross_encoder
from test_rerank import T0, TEXTS

from memstore import Episode, InvalidInput, MemoryStore
from memstore.recall.rerank import episode_rerank_text
from memstore.rerankers import CrossEncoderReranker, HTTPReranker, RerankerEndpointError

INFINITY = os.environ.get("MEMSTORE_TEST_INFINITY_DIR")
pytestmark = pytest.mark.skipif(
    not INFINITY,
    reason="no Infinity rerank server: set MEMSTORE_TEST_INFINITY_DIR to a directory with "
    "`pip install --no-deps --target DIR -r .ci/infinity.txt` (.ci/run does)",
)
KEY_ENV = "MEMSTORE_TEST_RERANK_KEY"
KEY = "test-key-3f9c1a"
QUERY = "when does the flight to Lisbon leave"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, model: Path) -> None:
        self.model = model
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkdtemp(prefix="memstore-infinity-")) / "server.log"
        env = {
            **os.environ,
            "PYTHONPATH": str(INFINITY),
            "HF_HUB_OFFLINE": "1",
            # No usage statistics leave the machine.
            "INFINITY_ANONYMOUS_USAGE_STATS": "0",
            "DO_NOT_TRACK": "1",
        }
        command = [sys.executable, "-m", "infinity_emb.cli", "v2", "--model-id", str(model)]
        command += ["--served-model-name", "tiny", "--engine", "torch", "--device", "cpu"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--api-key", KEY]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Infinity exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"Infinity did not start in 180 s: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.log.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def model_dir() -> Iterator[Path]:
    directory = build_cross_encoder()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[Server]:
    running = Server(model_dir)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


async def test_scores_are_the_models(server: Server, model_dir: Path, keyed: None) -> None:
    remote = HTTPReranker("tiny", base_url=server.url, api_key_env=KEY_ENV)
    local = CrossEncoderReranker(model_dir)
    try:
        got = await remote.rerank(QUERY, TEXTS)
    finally:
        await remote.aclose()
    # Infinity puts the logit through a sigmoid, as sentence-transformers does.
    assert got == pytest.approx(await local.rerank(QUERY, TEXTS), abs=1e-4)


async def test_recall_follows_the_servers_order(
    db_url: str, server: Server, model_dir: Path, keyed: None
) -> None:
    remote = HTTPReranker("tiny", base_url=server.url + "/", api_key_env=KEY_ENV)
    local = CrossEncoderReranker(model_dir)
    async with MemoryStore.open(db_url, reranker=remote, rerank_candidates=6) as store:
        await store.remember_many(
            [
                Episode(session_id=f"s{i}", user_id="alice", input=t, occurred_at=T0)
                for i, t in enumerate(TEXTS)
            ]
        )
        got = await store.recall_scored(QUERY, user_id="alice", limit=6)
        plain = await store.recall_scored(QUERY, user_id="alice", limit=6, rerank=False)
    await remote.aclose()
    model = await local.rerank(QUERY, [episode_rerank_text(m.episode) for m in got])
    assert model == sorted(model, reverse=True)
    assert [m.parts["rerank"] for m in got] == pytest.approx(model, abs=1e-4)
    assert [m.episode.id for m in got] != [m.episode.id for m in plain]


async def test_the_key_comes_from_the_environment_and_is_never_kept(
    server: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    reranker = HTTPReranker("tiny", base_url=server.url, api_key_env=KEY_ENV, max_retries=3)
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RerankerEndpointError, match="refused"):  # 401: not retried
        await reranker.rerank(QUERY, TEXTS)
    monkeypatch.setenv(KEY_ENV, "wrong")
    with pytest.raises(RerankerEndpointError, match="refused"):
        await reranker.rerank(QUERY, TEXTS)
    monkeypatch.setenv(KEY_ENV, KEY)
    assert len(await reranker.rerank(QUERY, TEXTS)) == len(TEXTS)
    await reranker.aclose()
    assert "retrying" not in caplog.text
    for shown in (repr(reranker), reranker.identity, str(vars(reranker)), caplog.text):
        assert KEY not in shown


async def test_an_unreachable_endpoint_is_retried_then_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    reranker = HTTPReranker(
        "tiny", base_url=f"http://127.0.0.1:{_free_port()}", max_retries=2, backoff=0.01
    )
    with pytest.raises(RerankerEndpointError, match="after 3 attempts"):
        await reranker.rerank(QUERY, TEXTS)
    assert caplog.text.count("retrying") == 2
    await reranker.aclose()


@pytest.mark.parametrize(
    "options",
    [
        {"base_url": "ftp://x"},
        {"base_url": "http://x", "timeout": 0},
        {"base_url": "http://x", "max_retries": -1},
        {"base_url": "http://x", "flavor": "openai"},
    ],
)
def test_bad_settings_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        HTTPReranker("tiny", **options)  # type: ignore[arg-type]


def test_password_in_the_url_is_not_shown() -> None:
    reranker = HTTPReranker("m", base_url="https://user:s3cret@example.invalid/v2")
    assert "s3cret" not in repr(reranker) and "s3cret" not in reranker.identity
