"""Every model provider against a hostile endpoint (tests/hostile_http.py, 127.0.0.1):
whatever it answers, the call ends within its deadline, reads a bounded answer, and
raises only its own MemstoreError, whose text, causes, warnings and log lines never
hold the API key (given as an argument or in the environment)."""

from __future__ import annotations

import logging
import math
import re
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from hostile_http import HOSTILE_MODES, WIDTH, HostileServer, hostile_server, key_parts

from memstore import EmbedderError, Episode, MemoryStore, MemstoreError
from memstore.outbound.retry import MAX_WAIT, retry_after
from memstore.outbound.secrets import Scrubber
from memstore.rerankers import HTTPReranker, RerankerEndpointError
from memstore.services.consolidation import ExtractionError, LLMConfig, LLMExtractor

pytest.importorskip("openai")
pytest.importorskip("httpx")

from memstore.embeddings.openai_api import OpenAIEmbedder

KEY = "sk-Q7vN2xLp9RtK4mWz8YbH3cJf"
KEY_ENV = "MEMSTORE_TEST_HOSTILE_KEY"
RERANK_MODES = tuple(m for m in HOSTILE_MODES if m != "1e39")  # a fine score, as a float
LLM_MODES = tuple(m for m in HOSTILE_MODES if m not in ("strings", "nan", "1e39", "10^400"))
EPISODE = Episode(id="e1", session_id="s", user_id="u", input="I live in Paris.")


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with hostile_server() as server:
        yield server


def texts_of(error: BaseException) -> list[str]:
    """The exception's text and every exception's in its cause and context chains."""
    found: list[str] = []
    todo: list[BaseException | None] = [error]
    seen: set[int] = set()
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        found += [str(current), repr(current), repr(current.args), repr(vars(current))]
        todo += [current.__cause__, current.__context__]
    return found


def assert_no_key(
    error: BaseException, caplog: pytest.LogCaptureFixture, caught: list[Any]
) -> None:
    shown = [*texts_of(error), caplog.text, *(r.getMessage() for r in caplog.records)]
    shown += [str(w.message) for w in caught]
    leaks = [part for part in key_parts(KEY) for text in shown if part in text]
    assert not leaks, (leaks[:3], shown)


@pytest.fixture
def watched(caplog: pytest.LogCaptureFixture) -> Iterator[list[Any]]:
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def embedder(server: HostileServer, **options: Any) -> OpenAIEmbedder:
    settings: dict[str, Any] = {"api_key": KEY, "timeout": 1.0, "max_retries": 1}
    return OpenAIEmbedder("m", base_url=server.url + "/v1", **{**settings, **options})


@pytest.mark.parametrize("mode", HOSTILE_MODES)
@pytest.mark.parametrize("source", ["argument", "environment"])
async def test_embedder_answers_are_typed_and_keyless(
    hostile: HostileServer,
    mode: str,
    source: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    watched: list[Any],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = embedder(hostile, dimensions=WIDTH, api_key=KEY if source == "argument" else None)
    assert (await model.embed(["hello"])).shape == (1, WIDTH)
    hostile.mode = mode
    with pytest.raises(EmbedderError) as raised:
        await model.embed(["hello"])
    assert hostile.authorizations[-1] == f"Bearer {KEY}"
    assert f"{hostile.url}/v1" in str(raised.value)
    assert_no_key(raised.value, caplog, watched)


@pytest.mark.parametrize("mode", HOSTILE_MODES)
async def test_the_width_probe_is_typed_and_keyless(
    hostile: HostileServer, mode: str, caplog: pytest.LogCaptureFixture, watched: list[Any]
) -> None:
    hostile.mode = mode
    with pytest.raises(EmbedderError) as raised:
        embedder(hostile)
    assert f"{hostile.url}/v1" in str(raised.value)
    assert_no_key(raised.value, caplog, watched)


def reranker(server: HostileServer, **options: Any) -> HTTPReranker:
    settings: dict[str, Any] = {"timeout": 1.0, "max_retries": 1, "backoff": 0.01}
    return HTTPReranker("m", base_url=server.url, api_key_env=KEY_ENV, **{**settings, **options})


@pytest.mark.parametrize("mode", RERANK_MODES)
async def test_reranker_answers_are_typed_and_keyless(
    hostile: HostileServer,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    watched: list[Any],
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    ranker = reranker(hostile)
    try:
        assert len(await ranker.rerank("q", ["a", "b"])) == 2
        hostile.mode = mode
        with pytest.raises(RerankerEndpointError) as raised:
            await ranker.rerank("q", ["a", "b"])
    finally:
        await ranker.aclose()
    assert hostile.authorizations[-1] == f"Bearer {KEY}"
    assert f"{hostile.url}/rerank" in str(raised.value)
    assert_no_key(raised.value, caplog, watched)


async def test_a_reranker_asks_about_at_most_max_texts_at_a_time(hostile: HostileServer) -> None:
    ranker = reranker(hostile)
    try:
        scores = await ranker.rerank("q", [f"text {i}" for i in range(1200)])
    finally:
        await ranker.aclose()
    assert hostile.documents == [1000, 200]  # Cohere refuses more than 1,000
    assert len(scores) == 1200 and scores[1000] == pytest.approx(0.1)


@pytest.mark.parametrize("mode", LLM_MODES)
async def test_llm_answers_are_typed_and_keyless(
    hostile: HostileServer, mode: str, caplog: pytest.LogCaptureFixture, watched: list[Any]
) -> None:
    config = LLMConfig(
        base_url=hostile.url + "/v1", model="m", api_key=KEY, timeout=1.0, backoff=0.01
    )
    extractor = LLMExtractor(config)
    assert await extractor.extract([EPISODE]) == []
    hostile.mode = mode
    with pytest.raises(ExtractionError) as raised:
        await extractor.extract([EPISODE])
    assert hostile.authorizations[-1] == f"Bearer {KEY}"
    assert_no_key(raised.value, caplog, watched)
    assert KEY not in repr(config)


@pytest.mark.parametrize("header", ["nan", "inf", "-5", "1e9", "soon", "date"])
async def test_retry_after_is_a_bounded_finite_wait(
    hostile: HostileServer,
    header: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv(KEY_ENV, KEY)
    if header == "date":  # a moment ago: retry at once
        header = format_datetime(datetime.now(UTC) - timedelta(seconds=5), usegmt=True)
    hostile.mode = f"retry-after:{header}"
    ranker = reranker(hostile)
    try:
        assert len(await ranker.rerank("q", ["a", "b"])) == 2  # the second attempt
    finally:
        await ranker.aclose()
    (waited,) = re.findall(r"retrying in (\S+) s", caplog.text)
    assert math.isfinite(float(waited)) and 0 <= float(waited) <= MAX_WAIT


def test_retry_after_values() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for unusable in (None, "nan", "NaN", "inf", "-inf", "-5", "1e9", "0x10", "", "soon"):
        assert retry_after(unusable, now=now) is None, unusable
    assert retry_after("2", now=now) == 2.0
    assert retry_after("1.5", now=now) == 1.5
    assert retry_after("1000000000", now=now) == MAX_WAIT
    assert retry_after("Thu, 01 Jan 2026 00:00:10 GMT", now=now) == 10.0
    assert retry_after("Wed, 31 Dec 2025 23:00:00 GMT", now=now) == 0.0
    assert retry_after("Fri, 01 Jan 2027 00:00:00 GMT", now=now) == MAX_WAIT


def test_the_scrubber_removes_keys_echoes_and_credential_shapes() -> None:
    scrub = Scrubber([KEY])
    for echoed in (
        f"you sent Bearer {KEY}",
        f'{{"message": "Incorrect API key provided: {KEY[:7]}****{KEY[-6:]}"}}',
        f"key={KEY[3:15]}",
        "Authorization: Basic dXNlcjpwYXNz",
        "api_key=abcdef123456",
    ):
        shown = scrub(echoed)
        assert not [part for part in key_parts(KEY) if part in shown], shown
        assert "dXNlcjpwYXNz" not in shown and "abcdef123456" not in shown
    assert scrub("model 'm' not found") == "model 'm' not found"
    assert KEY not in repr(scrub)


async def test_a_store_with_hostile_providers_raises_only_memstore_errors(
    db_url: str,
    hostile: HostileServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    watched: list[Any],
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    hostile.width = 384  # the width a database is migrated with by default
    model = embedder(hostile, dimensions=384, max_retries=0)
    ranker = reranker(hostile, max_retries=0)
    async with MemoryStore.open(db_url, embedder=model, reranker=ranker) as store:
        await store.remember(EPISODE)
        for mode in ("echo-400", "nan", "huge-gzip", "drip", "10^400", "html"):
            hostile.mode, hostile.only_path = mode, "/embeddings"
            with pytest.raises(MemstoreError) as raised:
                await store.remember(Episode(session_id="s", user_id="u", input="more"))
            assert_no_key(raised.value, caplog, watched)
            hostile.only_path = "/rerank"
            with pytest.raises(MemstoreError) as raised:
                await store.recall("Paris", user_id="u")
            assert_no_key(raised.value, caplog, watched)
        hostile.mode = "good"
        assert [e.id for e in await store.recall("Paris", user_id="u")] == [EPISODE.id]
        assert len(await store.recall("", user_id="u", limit=10)) == 1  # nothing else written
    await ranker.aclose()
