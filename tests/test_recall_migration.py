"""Revision 0003 on a populated database: old rows become searchable, downgrade keeps them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.engine import Connection

from memstore import MemoryStore
from memstore.db.engine import create_engine
from memstore.models.search import VECTOR_TABLES
from memstore.schema.migrate import alembic_config, downgrade, upgrade
from tests.store_parts import own_engine
from tests.test_search_expressions import vector_storage_of


def _check(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.check(config)  # raises if models and migrations drift


async def test_upgrade_populated_database_then_downgrade(empty_db_url: str) -> None:
    await upgrade(empty_db_url, "0002")
    engine = create_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO episodes (user_id, id, session_id, input, output, tool_calls, "
                    "metadata, occurred_at, created_at) VALUES ('alice', 'old-1', 's', "
                    "'we planted tomatoes', '', '[]', '{}', :t, :t)"
                ),
                {"t": datetime(2026, 1, 1, tzinfo=UTC).replace(tzinfo=None)},
            )
    finally:
        await engine.dispose()

    await upgrade(empty_db_url)
    engine = create_engine(empty_db_url)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_check)
    finally:
        await engine.dispose()
    async with MemoryStore.open(empty_db_url) as store:
        (hit,) = await store.recall_scored("tomatoes", user_id="alice", limit=1)
        assert hit.episode.id == "old-1" and hit.parts["keyword"] > 0

    await downgrade(empty_db_url, "0002")
    engine = create_engine(empty_db_url)
    try:
        async with engine.connect() as conn:
            ids = (await conn.execute(text("SELECT id FROM episodes"))).scalars().all()
    finally:
        await engine.dispose()
    assert ids == ["old-1"]
    await upgrade(empty_db_url)


async def test_reembed_switches_dimension_and_backfills(db_url: str, backend: str) -> None:
    from memstore import DimensionMismatch, Episode, Fact
    from memstore.embeddings import HashingEmbedder
    from memstore.search.reembed import reembed

    async with MemoryStore.open(db_url) as store, own_engine(db_url) as engine:
        await store.remember(Episode(session_id="s", user_id="alice", input="red bicycle"))
        await store.add_fact(
            Fact(user_id="alice", subject="alice", predicate="owns", object="a red bicycle")
        )
        result = await reembed(engine, HashingEmbedder(48))
        if store.backend == "postgresql":
            # ALTER COLUMN ... TYPE resets the storage to the type's default.
            async with engine.connect() as conn:
                assert await vector_storage_of(conn) == dict.fromkeys(VECTOR_TABLES, "MAIN")
                if backend == "citus":
                    # Citus does not propagate SET STORAGE: every shard must be set too.
                    for table in VECTOR_TABLES:
                        shards = await conn.execute(
                            text(
                                "SELECT DISTINCT result FROM run_command_on_shards("
                                "CAST(:t AS regclass), $$SELECT attstorage FROM pg_attribute "
                                "WHERE attrelid = '%s'::regclass AND attname = 'embedding'$$)"
                            ),
                            {"t": table},
                        )
                        assert list(shards.scalars()) == ["m"], table
    assert (result.previous_dimension, result.dimension) == (384, 48)
    assert (result.episodes, result.facts) == (1, 1)
    try:
        with pytest.raises(DimensionMismatch):
            async with MemoryStore.open(db_url, embedder=HashingEmbedder(384)):
                pass
        async with MemoryStore.open(db_url) as store:
            assert store.embedder.dim == 48
            hits = await store.recall_scored("bicycle", user_id="alice")
            assert hits[0].parts["dense"] > 0.3
            assert [f.object for f in await store.recall_facts("bicycle", user_id="alice")] == [
                "a red bicycle"
            ]
    finally:
        # The session-shared database must go back to the default width.
        async with own_engine(db_url) as engine:
            await reembed(engine, HashingEmbedder(384))
