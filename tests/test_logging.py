"""Operator log records on the ``memstore`` logger tree: migrations, consolidation batches,
LLM retries, slow statements; and no handler configured by the library."""

from __future__ import annotations

import logging

import pytest
from test_consolidation_llm import ChatServer, chat, extractor, remember_two

from memstore import Episode, InvalidInput, MemoryStore
from memstore.db.engine import create_engine
from memstore.db.slowlog import ENV_VAR, slow_query_ms_from_env
from memstore.schema.migrate import head_revision, upgrade

__all__ = ["chat"]  # the imported fixture


def _messages(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def test_the_library_adds_only_a_null_handler() -> None:
    root = logging.getLogger("memstore")
    assert [type(h) for h in root.handlers] == [logging.NullHandler]
    assert root.propagate and root.level == logging.NOTSET
    for name in (
        "memstore.schema.migrate",
        "memstore.services.consolidation.consolidator",
        "memstore.services.consolidation.llm",
        "memstore.db.slowlog",
    ):
        assert logging.getLogger(name).handlers == []


async def test_migration_logs_start_and_done_with_revisions(
    empty_db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memstore")
    await upgrade(empty_db_url)
    start, done = _messages(caplog, "memstore.schema.migrate")
    assert start.startswith("migration upgrade to head starting (database at None")
    assert done.startswith(f"migration upgrade done: None -> {head_revision()} in ")
    caplog.clear()
    await upgrade(empty_db_url)  # idempotent: says so with the same revision on both sides
    assert _messages(caplog, "memstore.schema.migrate")[1].startswith(
        f"migration upgrade done: {head_revision()} -> {head_revision()} in "
    )


async def test_consolidation_logs_each_batch_with_tenant_counts_and_duration(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    await store.remember_many(
        [
            Episode(user_id="alice", session_id="s", input="I live in Paris."),
            Episode(user_id="alice", session_id="s", input="I work at Acme."),
            Episode(user_id="bob", session_id="b", input="I live in Rome."),
        ]
    )
    caplog.set_level(logging.INFO, logger="memstore")
    result = await store.consolidate_all_tenants()
    batches = sorted(_messages(caplog, "memstore.services.consolidation.consolidator"))
    assert len(batches) == 3  # one per tenant, then the run summary
    alice, bob, summary = batches
    assert alice.startswith(
        "consolidation batch committed: tenant='alice' processed=2 "
        "added=2 reinforced=0 superseded=0 unchanged=0 in "
    )
    assert bob.startswith("consolidation batch committed: tenant='bob' processed=1 added=1 ")
    assert "extractor rules" in alice
    assert summary.startswith("consolidation run done")
    assert result.summary() in summary


async def test_llm_retries_are_logged_then_the_batch_failure(
    store: MemoryStore, chat: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat.mode = "5xx"
    await remember_two(store)
    caplog.set_level(logging.INFO, logger="memstore")
    with pytest.raises(Exception, match="HTTP 503"):
        await store.consolidate_all_tenants(extractor=extractor(chat, max_retries=2))
    retries = _messages(caplog, "memstore.services.consolidation.llm")
    assert [m.split(" failed")[0] for m in retries] == [
        "LLM extractor attempt 1 of 3",
        "LLM extractor attempt 2 of 3",
    ]
    assert "LLMEndpointError: LLM endpoint answered HTTP 503" in retries[0]
    assert all(
        r.levelno == logging.WARNING
        for r in caplog.records
        if r.name == "memstore.services.consolidation.llm"
    )
    (failed,) = _messages(caplog, "memstore.services.consolidation.consolidator")
    assert failed.startswith("consolidation batch failed after ")
    assert "stay queued" in failed


async def test_slow_statements_are_logged_without_their_parameters(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memstore")
    # Threshold 0: every statement is "slow", so the test does not depend on timing.
    async with MemoryStore.open(db_url, engine_options={"slow_query_ms": 0}) as store:
        await store.remember(
            Episode(
                user_id="alice", session_id="s", input="secret-token-4711 must not reach the log"
            )
        )
    slow = [r for r in caplog.records if r.name == "memstore.db.slowlog"]
    assert slow and all(r.levelno == logging.WARNING for r in slow)
    assert any("INSERT INTO episodes" in r.getMessage() for r in slow)
    assert all(r.getMessage().startswith("slow statement: ") for r in slow)
    assert not any("secret-token-4711" in r.getMessage() for r in slow)


async def test_slow_statement_log_is_off_by_default_and_set_by_env(
    db_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger="memstore")
    monkeypatch.delenv(ENV_VAR, raising=False)
    async with MemoryStore.open(db_url) as store:
        await store.recall("anything", user_id="alice")
    assert _messages(caplog, "memstore.db.slowlog") == []
    monkeypatch.setenv(ENV_VAR, "0")
    async with MemoryStore.open(db_url) as store:
        await store.recall("anything", user_id="alice")
    assert _messages(caplog, "memstore.db.slowlog")
    caplog.clear()
    monkeypatch.setenv(ENV_VAR, "3600000")  # an hour: nothing on a healthy database
    async with MemoryStore.open(db_url) as store:
        await store.recall("anything", user_id="alice")
    assert _messages(caplog, "memstore.db.slowlog") == []


@pytest.mark.parametrize("raw", ["fast", "-1", "nan", "inf"])
def test_a_bad_slow_query_setting_is_invalid_input(raw: str) -> None:
    with pytest.raises(InvalidInput, match=ENV_VAR):
        slow_query_ms_from_env({ENV_VAR: raw})
    with pytest.raises(InvalidInput, match="slow_query_ms"):
        create_engine("sqlite+aiosqlite://", slow_query_ms=float(raw) if raw != "fast" else -1)


def test_unset_or_empty_setting_means_off() -> None:
    assert slow_query_ms_from_env({}) is None
    assert slow_query_ms_from_env({ENV_VAR: " "}) is None
    assert slow_query_ms_from_env({ENV_VAR: "250"}) == 250.0
