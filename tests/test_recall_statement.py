"""Recall in one statement: round trips, the dense-only shape, the vector cache."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from memstore import Episode, MemoryStore
from memstore.embeddings import HashingEmbedder
from memstore.recall import RecallTuning
from memstore.schema.migrate import upgrade
from tests.conftest import is_postgres
from tests.sent_sql import every_statement
from tests.store_parts import own_engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 384


class FixedEmbedder:
    """``v<n>`` embeds to row n of a seeded matrix; other texts to a hash."""

    dim = DIM

    def __init__(self) -> None:
        self.vectors = np.random.default_rng(3).standard_normal((200, DIM)).astype(np.float32)
        self.vectors /= np.linalg.norm(self.vectors, axis=1, keepdims=True)
        self.fallback = HashingEmbedder(DIM)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.fallback.embed_sync(texts)
        for i, t in enumerate(texts):
            if t.startswith("v") and t[1:].isdigit():
                out[i] = self.vectors[int(t[1:])]
        return out


def episodes(user: str, rows: range) -> list[Episode]:
    return [
        Episode(
            user_id=user,
            session_id=f"s{i // 10}",
            input=f"v{i}",
            occurred_at=T0 + timedelta(minutes=i),
        )
        for i in rows
    ]


@contextmanager
def statements() -> Iterator[list[str]]:
    """The statements every engine of the process sends meanwhile (the store's only)."""
    seen: list[str] = []

    with every_statement(lambda sql, _params: seen.append(sql)):
        yield seen


async def test_recall_reads_rows_in_one_statement(db_url: str) -> None:
    async with MemoryStore.open(db_url, embedder=FixedEmbedder()) as store:
        await store.remember_many(episodes("alice", range(60)))
        await store.recall("v1 v2", user_id="alice")  # caches warm
        with statements() as seen:
            found = await store.recall("v1 v2", user_id="alice", limit=5)
        reads = [s for s in seen if s.strip().upper() not in ("BEGIN", "COMMIT")]
        # the recall statement, plus (SQLite) the one-row version of the vector cache
        assert [s for s in reads if "episodes" in s and "WITH dense" in s] != []
        assert len(reads) <= (2 if store.backend == "sqlite" else 1), reads
        assert len(found) == 5


async def test_dense_only_tuning_ranks_by_cosine(db_url: str) -> None:
    embedder = FixedEmbedder()
    tuning = RecallTuning(keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0)
    async with MemoryStore.open(db_url, embedder=embedder, recall_tuning=tuning) as store:
        await store.remember_many(episodes("alice", range(80)))
        await store.remember_many(episodes("bob", range(80, 160)))
        for q in (0, 7, 150):
            hits = await store.recall_scored(f"v{q}", user_id="alice", limit=10)
            sims = embedder.vectors[:80] @ embedder.vectors[q]
            expected = [f"v{i}" for i in np.argsort(-sims, kind="stable")[:10]]
            assert [h.episode.input for h in hits] == expected
            assert [h.parts["dense"] for h in hits] == sorted(
                (h.parts["dense"] for h in hits), reverse=True
            )
            assert abs(hits[0].parts["dense"] - float(np.max(sims))) < 1e-4


async def test_writes_through_another_store_reach_recall(db_url: str) -> None:
    """Each store caches vectors; a write by any store (or process) invalidates them."""
    embedder = FixedEmbedder()
    async with (
        MemoryStore.open(db_url, embedder=embedder) as reader,
        MemoryStore.open(db_url, embedder=embedder) as writer,
    ):
        await writer.remember_many(episodes("alice", range(40)))
        before = await reader.recall("v120", user_id="alice", limit=3)
        assert "v120" not in [e.input for e in before]

        await writer.remember_many(episodes("alice", range(120, 121)))
        after = await reader.recall("v120", user_id="alice", limit=3)
        assert after[0].input == "v120"

        await writer.forget(user_id="alice", session_id="s12")
        gone = await reader.recall("v120", user_id="alice", limit=3)
        assert "v120" not in [e.input for e in gone]

        await writer.forget(user_id="alice")
        assert await reader.recall("v3", user_id="alice", limit=3) == []


async def test_postgres_plans_every_recall_for_its_tenant(db_url: str, backend: str) -> None:
    # A generic plan (chosen after five runs of a prepared statement) ignores
    # how many rows the tenant has; recall was 2-3x slower with one.
    if not is_postgres(backend):
        return
    # An engine made as the store makes its own (memstore.db.engine.create_engine).
    async with own_engine(db_url) as engine, engine.connect() as conn:
        mode = await conn.scalar(text("SHOW plan_cache_mode"))
    assert mode == "force_custom_plan"


def _discarded_by_joins(node: dict[str, Any]) -> int:
    """Rows a plan compared and threw away while joining: join filters, and the
    filters of reads of episodes that run once per outer row (lookups)."""
    loops = int(node.get("Actual Loops", 1))
    count = float(node.get("Rows Removed by Join Filter", 0)) * loops
    if node.get("Relation Name") == "episodes" and loops > 1:
        count += float(node.get("Rows Removed by Filter", 0)) * loops
    return int(count) + sum(_discarded_by_joins(child) for child in node.get("Plans", []))


@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_postgres_plan_of_a_tenant_written_since_the_last_analyze(
    empty_db_url: str,
) -> None:
    """Postgres estimates one row for a tenant that is not in the table's statistics
    (written since the last ANALYZE: a new database, a bulk import). The statement's
    joins back to episodes must not hang on that estimate: joined by id, the planner
    compared every row of the tenant with every candidate (tenant x pool rows)."""
    await upgrade(empty_db_url)
    rows = 1500
    async with (
        MemoryStore.open(empty_db_url, embedder=HashingEmbedder(DIM)) as store,
        own_engine(empty_db_url) as engine,
    ):
        async with engine.begin() as conn:
            # so that nothing analyses the table behind the test
            await conn.execute(text("ALTER TABLE episodes SET (autovacuum_enabled = off)"))
        await store.remember_many(
            [Episode(user_id="early", session_id="s", input=f"early {i}") for i in range(40)]
        )
        async with engine.begin() as conn:
            await conn.execute(text("ANALYZE episodes"))
        # sessions of three turns: the neighbour join's own filter discards little
        await store.remember_many(
            [
                Episode(
                    user_id="late",
                    session_id=f"s{i // 3}",
                    input=f"k{i % 13} t{i % 97} item {i}",
                    occurred_at=T0 + timedelta(minutes=i),
                )
                for i in range(rows)
            ]
        )
        async with engine.connect() as conn:
            plan = await conn.scalar(
                text("EXPLAIN (FORMAT JSON) SELECT * FROM episodes WHERE user_id = 'late'")
            )
        assert plan[0]["Plan"]["Plan Rows"] < 10  # the misestimate this test is about

        captured: list[tuple[str, Any]] = []

        def record(sql: str, params: Any) -> None:
            if "WITH dense" in sql:
                captured.append((sql, params))

        with every_statement(record):
            found = await store.recall_scored("k5 t7", user_id="late", limit=10)
        assert len(found) == 10 and len(captured) == 1
        sql, params = captured[0]
        async with engine.connect() as conn:
            result = await conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            analysed = result.scalar_one()
    discarded = _discarded_by_joins(analysed[0]["Plan"])
    assert discarded < rows, f"{discarded} rows compared and discarded by joins"
