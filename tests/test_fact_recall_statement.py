"""Fact recall through the pipeline episodes use: one ranked statement, the query tokenised once.

What the server (or SQLite) is sent is observed on the real connections, as in
tests/test_facts_reads.py: SQLite statements through SQLAlchemy's cursor
events, Postgres through asyncpg's query loggers (which see BEGIN and COMMIT,
not the prepared statements).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

import memstore.core.lexical as lexical
from memstore import Episode, Fact, MemoryStore
from memstore.schema.migrate import downgrade, upgrade
from tests.store_parts import store_with_parts
from tests.test_facts_reads import Sent, _queries

MARCH = datetime(2026, 3, 1, tzinfo=UTC)


async def _facts(store: MemoryStore) -> None:
    for predicate, obj in (("likes", "jazz music"), ("lives_in", "London"), ("owns", "a boat")):
        fact = Fact(user_id="alice", subject="alice", predicate=predicate, object=obj)
        await store.add_fact(replace(fact, valid_from=MARCH))


async def test_fact_recall_is_one_ranked_statement(db_url: str) -> None:
    """Postgres ranks facts in one statement, outside any transaction; SQLite reads the
    vectors and runs the ranked statement in one snapshot: two reads, not one per signal."""
    async with store_with_parts(db_url) as parts:
        store = parts.store
        await _facts(store)
        sent = Sent(parts)
        async with sent.during() as seen:
            found = await store.recall_facts("where does alice live", user_id="alice", limit=2)
        assert len(found) == 2
        queries = _queries(seen)
        if db_url.startswith("postgresql"):
            # No transaction (asyncpg may introspect a type the first time it meets it).
            assert "BEGIN" not in queries and "COMMIT" not in queries, seen
        else:
            reads = [q for q in queries if q in ("SELECT", "WITH")]
            assert reads == ["SELECT", "WITH"], seen


async def test_fact_keywords_count_words_as_the_index_finds_them(db_url: str) -> None:
    """A query term counts in every word it begins, as the full-text index matches it
    and as episode recall counts it: "live" is in "lives" (the Python scorer stemmed
    "lives" to "liv" and gave the fact no keyword score)."""
    async with MemoryStore.open(db_url) as store:
        await _facts(store)
        (match,) = await store.recall_facts_scored("live", user_id="alice", limit=1)
        assert match.fact.object == "London"
        assert match.parts["keyword"] > 0
        assert match.parts["keyword_z"] > match.parts["dense_z"] - 10  # a real z-score
        episode_id = await store.remember(
            Episode(session_id="s", user_id="alice", input="alice lives in London")
        )
        (hit,) = await store.recall_scored("live", user_id="alice", limit=1)
        assert hit.episode.id == episode_id and hit.parts["keyword"] > 0


@pytest.mark.parametrize("kind", ["episodes", "facts"])
async def test_a_recall_query_is_tokenised_once(
    db_url: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terms that rank the rows are the terms their relevance is measured with."""
    async with MemoryStore.open(db_url) as store:
        await _facts(store)
        await store.remember(Episode(session_id="s", user_id="alice", input="alice owns a boat"))
        calls: list[str] = []
        tokens = lexical.keyword_tokens

        def counted(text: str) -> list[str]:
            calls.append(text)
            return tokens(text)

        monkeypatch.setattr(lexical, "keyword_tokens", counted)
        if kind == "episodes":
            found: list[object] = list(
                await store.recall_scored("boat", user_id="alice", min_score=0.1)
            )
        else:
            found = list(await store.recall_facts_scored("boat", user_id="alice", min_score=0.1))
        assert found
        assert calls == ["boat"]


async def test_revision_0013_on_a_populated_database(empty_db_url: str) -> None:
    """Facts stored before 0013 (SQLite: no vocabulary view to count fact terms from)
    get keyword scores once it is applied; its downgrade keeps them."""
    await upgrade(empty_db_url)
    async with MemoryStore.open(empty_db_url) as store:
        await _facts(store)
    await downgrade(empty_db_url, "0012")
    await upgrade(empty_db_url)
    async with MemoryStore.open(empty_db_url) as store:
        (match,) = await store.recall_facts_scored("boat", user_id="alice", limit=1)
        assert match.fact.object == "a boat" and match.parts["keyword"] > 0
