"""One-statement reads (store.facts, fact_history, exact recall on Postgres): no transaction.

What the server (or SQLite) is sent is observed on the real connections: SQLite
statements through sqlite3's trace callback, Postgres through asyncpg's query
loggers, which see the queries asyncpg's connection runs itself (BEGIN, COMMIT, the
pool's RESET, memstore's per-call reads) but not those SQLAlchemy runs as
prepared statements.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import event, text
from sqlalchemy.util import await_

from memstore import Fact, MemoryStore
from memstore.repositories.fact_reads import FACT_COLUMNS, fact_from_columns
from memstore.repositories.facts import fact_from_row
from tests.store_parts import StoreParts, store_with_parts

MARCH = datetime(2026, 3, 1, tzinfo=UTC)


class Sent:
    """Records every statement memstore's engine sends, for the life of the store.

    On the drivers' own connections, whatever path a statement took to them:
    asyncpg's query loggers, SQLite's trace callback (which also sees BEGIN).
    """

    def __init__(self, parts: StoreParts) -> None:
        self.log: list[str] = []
        self._drivers: set[int] = set()
        # Runs after memstore's own checkout hook: a RESET it sends is
        # logged from the second checkout of a connection on.
        event.listen(parts.engine.sync_engine, "checkout", self._on_checkout)

    def _on_checkout(self, dbapi_connection: Any, *_: Any) -> None:
        driver = dbapi_connection.driver_connection
        if id(driver) in self._drivers:
            return
        self._drivers.add(id(driver))
        if isinstance(driver, aiosqlite.Connection):
            await_(driver.set_trace_callback(self.log.append))
        else:
            driver.add_query_logger(lambda record: self.log.append(record.query))

    @asynccontextmanager
    async def during(self) -> AsyncIterator[list[str]]:
        # asyncpg calls its query loggers at the loop's next turn: what ran before
        # is logged before the start, what runs inside before the end
        await asyncio.sleep(0)
        start = len(self.log)
        seen: list[str] = []
        try:
            yield seen
        finally:
            await asyncio.sleep(0)
            seen += self.log[start:]


def _queries(seen: list[str]) -> list[str]:
    return [" ".join(s.split()).split(" ", 1)[0].rstrip(";").upper() for s in seen]


async def _two_versions(store: MemoryStore) -> None:
    await store.add_fact(
        Fact(
            user_id="alice",
            subject="alice",
            predicate="lives_in",
            object="Paris",
            valid_from=MARCH - timedelta(days=59),
        )
    )
    await store.add_fact(
        Fact(
            user_id="alice",
            subject="alice",
            predicate="lives_in",
            object="Berlin",
            valid_from=MARCH,
        )
    )


async def test_reads_of_one_statement_send_only_that_statement(db_url: str) -> None:
    postgres = db_url.startswith("postgresql")
    async with store_with_parts(db_url) as parts:
        store = parts.store
        sent = Sent(parts)
        await _two_versions(store)
        async with sent.during() as seen:
            await _two_versions(store)  # unchanged, still one transaction each
        # The loggers see transactions: a write has its BEGIN and COMMIT.
        # (asyncpg's logger shows only executemany among the statements: on Postgres the
        # change log's rows of a write that supersedes; they are inside its transaction.)
        bounds = [q for q in _queries(seen) if q != "INSERT"] if postgres else _queries(seen)
        assert bounds[:2] == (["BEGIN", "COMMIT"] if postgres else ["BEGIN", "SELECT"]), seen
        for read in (
            lambda: store.facts(user_id="alice", subject="alice", predicate="lives_in"),
            lambda: store.fact_history(user_id="alice", subject="alice"),
            lambda: store.fact_history(user_id="alice", fact_id="no-such-fact"),
        ):
            async with sent.during() as seen:
                await read()
            # No BEGIN / COMMIT around it, and on Postgres no RESET of the
            # tenant setting: the connection's last user was memstore itself.
            assert _queries(seen) == ["SELECT"], seen


async def test_a_connection_used_by_application_sql_is_still_reset(db_url: str) -> None:
    # One pooled connection, so the application's SQL and the read share it.
    one = {"pool_size": 1, "max_overflow": 0}
    async with store_with_parts(db_url, engine_options=one) as parts:
        store = parts.store
        sent = Sent(parts)
        await _two_versions(store)
        await store.fact_history(user_id="alice")
        async with parts.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            await conn.commit()
        async with sent.during() as seen:
            assert len(await store.fact_history(user_id="alice")) == 3
        expected = ["SELECT"] if store.backend == "sqlite" else ["RESET", "SELECT"]
        assert _queries(seen) == expected, seen


async def test_an_idle_connection_is_reset_even_after_memstores_own_use(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkout RESET doubles as the liveness check of connections left idle."""
    from memstore.backends.postgresql import connections

    one = {"pool_size": 1, "max_overflow": 0}
    async with store_with_parts(db_url, engine_options=one) as parts:
        store = parts.store
        sent = Sent(parts)
        await _two_versions(store)
        await store.fact_history(user_id="alice")
        # Every connection counts as idle: the next checkout must round-trip.
        monkeypatch.setattr(connections, "LIVENESS_IDLE_S", 0.0)
        async with sent.during() as seen:
            assert len(await store.fact_history(user_id="alice")) == 3
        expected = ["SELECT"] if store.backend == "sqlite" else ["RESET", "SELECT"]
        assert _queries(seen) == expected, seen


async def test_reads_return_what_the_versions_hold(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        await _two_versions(store)
        history = await store.fact_history(user_id="alice", subject="alice", predicate="lives_in")
        # Paris (cut at March, and its superseded open-ended version), then Berlin.
        assert [(f.object, f.valid_to is None) for f in history] == [
            ("Paris", True),
            ("Paris", False),
            ("Berlin", True),
        ]
        assert all(f.user_id == "alice" and f.recorded_at is not None for f in history)
        assert {f.valid_from.tzinfo for f in history if f.valid_from} == {UTC}
        by_id = await store.fact_history(user_id="alice", fact_id=history[2].fact_id)
        assert by_id == [history[2]]
        assert await store.fact_history(user_id="bob") == []
        april = MARCH + timedelta(days=31)
        believed = await store.facts(user_id="alice", predicate="lives_in", valid_at=april)
        assert [f.object for f in believed] == ["Berlin"]
        assert await store.facts(user_id="alice", limit=1) == [history[2]]


def test_a_fact_from_a_row_equals_the_constructed_fact() -> None:
    values: dict[str, Any] = {
        "id": "v1",
        "fact_id": "f1",
        "user_id": "alice",
        "subject": "alice",
        "predicate": "lives_in",
        "object": "Paris",
        "single_valued": True,
        "confidence": 0.5,
        "sources": ["s1", "s2"],
        "valid_from": MARCH,
        "valid_to": None,
        "recorded_at": MARCH,
        "superseded_at": MARCH + timedelta(days=1),
    }
    row = tuple(values[c.name] for c in FACT_COLUMNS)
    fact = fact_from_columns(row)
    expected = fact_from_row(type("Row", (), values)())  # type: ignore[arg-type]
    assert fact == expected
    assert fact.sources == ("s1", "s2")
    assert hash(fact) == hash(expected)
    assert repr(fact) == repr(expected)


async def test_postgres_recall_of_a_small_tenant_is_one_statement(db_url: str) -> None:
    """Exact recall needs no transaction once the tenant's size is known (cached).

    The first recall opens one, which refreshes the cached statistics; a recall
    through HNSW (a tenant over ``exact_scan_threshold``) always does, for its
    ``SET LOCAL``.
    """
    from memstore import Episode

    postgres = db_url.startswith("postgresql")
    async with store_with_parts(db_url) as parts:
        store = parts.store
        sent = Sent(parts)
        await store.remember_many(
            [
                Episode(session_id="s", user_id="alice", input=f"we talked about boats {i}")
                for i in range(5)
            ]
        )
        async with sent.during() as first:
            assert await store.recall("boats", user_id="alice", limit=3)
        async with sent.during() as second:
            hits = await store.recall("boats", user_id="alice", limit=3)
        assert len(hits) == 3
        if postgres:
            assert _queries(first)[:1] == ["BEGIN"] and "COMMIT" in _queries(first)
            assert _queries(second) == ["WITH"], second
        else:
            # SQLite reads the search version and ranks in one snapshot.
            assert _queries(second)[0] == "BEGIN", second
