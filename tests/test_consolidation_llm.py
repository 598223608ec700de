"""LLM extractor against a local OpenAI-compatible chat-completions server (127.0.0.1 only)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import table_counts
from consolidation_helpers import JUNE, MARCH, consolidation_marks

from memstore import Episode, LLMEndpointError, LLMResponseError, MemoryStore
from memstore.errors import InvalidInput
from memstore.services.consolidation import LLMConfig, LLMExtractor


class ChatServer:
    """Speaks just enough of POST /v1/chat/completions; ``mode`` picks the behaviour."""

    def __init__(self) -> None:
        self.mode = "good"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": "no such path"})
                    return
                mode = server.mode
                if mode == "no-schema":  # an older server: json_object only
                    if body.get("response_format", {}).get("type") != "json_object":
                        self._send(400, {"error": {"message": "unknown response_format"}})
                        return
                    mode = "good"
                if mode == "flaky":  # one failure, then fine
                    mode = "5xx" if len(server.requests) == 1 else "good"
                if mode == "slow":
                    time.sleep(1.5)
                    mode = "good"
                if mode == "5xx":
                    self._send(503, {"error": "overloaded"})
                    return
                if mode == "401":
                    self._send(401, {"error": "bad key"})
                    return
                if mode == "not-completion":
                    self._send(200, {"result": "ok"})
                    return
                turns = json.loads(body["messages"][-1]["content"])["turns"]
                content = server.answer(mode, turns)
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @staticmethod
    def answer(mode: str, turns: list[dict[str, Any]]) -> str:
        if mode == "malformed":
            return '{"facts": [{"episode_id": "oops", '
        facts = []
        for turn in turns:
            if "Paris" in turn["user"]:
                facts.append(
                    {
                        "episode_id": turn["episode_id"],
                        "subject": "user",
                        "predicate": "Lives In",
                        "object": "Paris",
                        "confidence": 0.9,
                    }
                )
                facts.append(
                    {
                        "episode_id": turn["episode_id"],
                        "subject": "Emma",
                        "predicate": "sister_of",
                        "object": "user",
                        "confidence": 0.7,
                    }
                )
            if "London" in turn["user"]:
                facts.append(
                    {
                        "episode_id": turn["episode_id"],
                        "subject": "I",
                        "predicate": "lives_in",
                        "object": "London",
                        "confidence": 0.8,
                    }
                )
        if mode == "bad-item":
            facts.append(
                {
                    "episode_id": turns[0]["episode_id"],
                    "subject": "user",
                    "predicate": "likes",
                    "object": "tea",
                    "confidence": 5,
                }
            )
        return json.dumps({"facts": facts})


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def extractor(chat: ChatServer, **overrides: Any) -> LLMExtractor:
    pytest.importorskip("openai", reason="LLMExtractor needs memstore[llm]")
    config = dict(
        base_url=chat.url,
        model="test-model",
        api_key="sk-test",
        timeout=5.0,
        max_retries=2,
        backoff=0.0,
    )
    config.update(overrides)
    return LLMExtractor(LLMConfig(**config))


async def remember_two(store: MemoryStore) -> list[str]:
    return await store.remember_many(
        [
            Episode(
                user_id="alice",
                session_id="s",
                occurred_at=MARCH,
                input="I live in Paris with my sister Emma.",
            ),
            Episode(user_id="alice", session_id="s", occurred_at=JUNE, input="Moved to London!"),
        ]
    )


async def test_good_json_becomes_facts(store: MemoryStore, chat: ChatServer) -> None:
    paris, london = await remember_two(store)
    result = await store.consolidate_all_tenants(extractor=extractor(chat))
    assert (result.processed, result.added, result.superseded) == (2, 2, 1)
    assert len(chat.requests) == 1
    request = chat.requests[0]
    assert request["model"] == "test-model"
    # JSON-schema structured output, the batch's episode ids as the only allowed ones.
    response_format = request["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    item = schema["properties"]["facts"]["items"]
    assert item["properties"]["episode_id"]["enum"] == [paris, london]
    assert set(item["required"]) == {"episode_id", "subject", "predicate", "object", "confidence"}
    assert chat.headers[0]["authorization"] == "Bearer sk-test"
    history = await store.fact_history(user_id="alice", subject="alice", predicate="lives_in")
    assert [
        (f.object, f.valid_from, f.valid_to, f.sources) for f in history if f.superseded_at is None
    ] == [("Paris", MARCH, JUNE, (paris,)), ("London", JUNE, None, (london,))]
    (emma,) = await store.fact_history(user_id="alice", subject="Emma")
    assert (emma.predicate, emma.object, emma.confidence) == ("sister_of", "user", 0.7)


async def test_an_endpoint_without_json_schema_gets_json_object(
    store: MemoryStore, chat: ChatServer
) -> None:
    chat.mode = "no-schema"
    await remember_two(store)
    llm = extractor(chat, max_retries=0)
    result = await store.consolidate_all_tenants(extractor=llm)
    assert (result.processed, result.added) == (2, 2)
    assert [r["response_format"]["type"] for r in chat.requests] == ["json_schema", "json_object"]
    # Remembered: the next batch asks for a JSON object at once.
    await store.remember(
        Episode(user_id="alice", session_id="s", occurred_at=JUNE, input="Still in London.")
    )
    await store.consolidate_all_tenants(extractor=llm)
    assert chat.requests[-1]["response_format"] == {"type": "json_object"}
    assert len(chat.requests) == 3


async def test_no_api_key_sends_no_authorization(
    store: MemoryStore, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A keyless local endpoint: no bearer header, and none taken from the environment.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    await remember_two(store)
    result = await store.consolidate_all_tenants(extractor=extractor(chat, api_key=None))
    assert result.processed == 2
    assert "authorization" not in chat.headers[0]


async def test_a_retry_recovers_from_one_5xx(store: MemoryStore, chat: ChatServer) -> None:
    chat.mode = "flaky"
    await remember_two(store)
    result = await store.consolidate_all_tenants(extractor=extractor(chat))
    assert result.processed == 2
    assert len(chat.requests) == 2


@pytest.mark.parametrize(
    ("mode", "error", "message"),
    [
        ("malformed", LLMResponseError, "not valid JSON"),
        ("not-completion", LLMResponseError, "chat-completions format"),
        ("bad-item", LLMResponseError, "confidence outside 0..1"),
        ("5xx", LLMEndpointError, "HTTP 503"),
        ("slow", LLMEndpointError, "timed out"),
        ("401", LLMEndpointError, "HTTP 401"),
    ],
)
async def test_misbehaving_endpoint_writes_nothing(
    db_url: str,
    store: MemoryStore,
    chat: ChatServer,
    mode: str,
    error: type[Exception],
    message: str,
) -> None:
    chat.mode = mode
    await remember_two(store)
    with pytest.raises(error, match=message):
        await store.consolidate_all_tenants(extractor=extractor(chat, timeout=0.3, max_retries=1))
    # Bounded retries: transport and parse failures are retried once here; an
    # invalid item or a 4xx is final at once.
    assert len(chat.requests) == (1 if mode in ("bad-item", "401") else 2)
    assert (await table_counts(db_url))["facts"] == 0
    assert await consolidation_marks(db_url) == {}
    chat.mode = "good"
    assert (await store.consolidate_all_tenants(extractor=extractor(chat))).processed == 2


async def test_the_api_key_is_never_logged(
    store: MemoryStore, chat: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat.mode = "401"
    await remember_two(store)
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMEndpointError) as failure:
        await store.consolidate_all_tenants(extractor=extractor(chat, api_key="sk-secret-4711"))
    assert chat.headers[0]["authorization"] == "Bearer sk-secret-4711"
    assert "sk-secret-4711" not in caplog.text
    assert "sk-secret-4711" not in str(failure.value)


async def test_unreachable_endpoint(db_url: str, store: MemoryStore) -> None:
    await remember_two(store)
    pytest.importorskip("openai", reason="LLMExtractor needs memstore[llm]")
    dead = LLMExtractor(
        LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout=1.0, max_retries=0)
    )
    with pytest.raises(LLMEndpointError, match="unreachable"):
        await store.consolidate_all_tenants(extractor=dead)
    assert (await table_counts(db_url))["facts"] == 0


def test_config_from_env() -> None:
    env = {
        "MEMSTORE_LLM_BASE_URL": "http://127.0.0.1:1/v1",
        "MEMSTORE_LLM_MODEL": "m",
        "OPENAI_API_KEY": "k",
        "MEMSTORE_LLM_TIMEOUT": "7.5",
    }
    config = LLMConfig.from_env(env)
    assert (config.base_url, config.model, config.api_key, config.timeout) == (
        "http://127.0.0.1:1/v1",
        "m",
        "k",
        7.5,
    )
    assert LLMConfig.from_env(env, model="other").model == "other"
    with pytest.raises(InvalidInput, match="base URL"):
        LLMConfig.from_env({})
    with pytest.raises(InvalidInput, match="http"):
        LLMConfig(base_url="ftp://x", model="m")
