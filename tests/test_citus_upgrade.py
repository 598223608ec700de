"""Migrations applied after distribution: `memstore migrate` on a distributed cluster.

An operator who distributed the schema at an older release upgrades with
`memstore migrate` on the coordinator, as on one PostgreSQL. Citus propagates most DDL
(ADD COLUMN, generated columns, CREATE INDEX) to every shard; revision 0010's
``ALTER COLUMN … SET STORAGE`` it does not ("alter table command is currently
unsupported"), so that revision sets it on every shard by Citus's manual propagation,
which must run in a migration run of its own.

Only with the citus backend (``MEMSTORE_TEST_CITUS=1``; tests/conftest.py).
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

from memstore import Episode, MemoryStore
from memstore.backends.postgresql.citus import apply_citus, citus_plan
from memstore.db.engine import create_engine
from memstore.errors import ConfigurationError
from memstore.models.search import VECTOR_TABLES
from memstore.schema.migrate import current_revision, head_revision, upgrade
from tests.conftest import CITUS_ENABLED

pytestmark = [
    pytest.mark.citus,
    pytest.mark.skipif(not CITUS_ENABLED, reason="the Citus stage is off (MEMSTORE_TEST_CITUS=1)"),
]

# Revisions up to 0007 create the first tables; 0008-0013 alter distributed tables;
# 0014 creates two more (the change log), which `memstore citus --apply` distributes
# after the upgrade (docs/SCALING.md).
DISTRIBUTED_AT = "0007"
CREATED_LATER = {"change_heads", "changes"}


async def _distribute(url: str) -> None:
    """`memstore citus --apply`'s statements, on a schema that is not at head yet."""
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            tables = set(
                (
                    await conn.execute(
                        text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                    )
                ).scalars()
            )
            for statement in citus_plan().statements:
                if "create_" in statement:
                    table = statement.split("'")[1]
                    if table in CREATED_LATER:
                        assert table not in tables, statement
                        continue
                    assert table in tables, statement
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", [pytest.param("citus", marks=pytest.mark.citus)])
async def test_upgrade_after_distribution_reaches_head_on_every_shard(
    empty_db_url: str,
) -> None:
    await upgrade(empty_db_url, DISTRIBUTED_AT)
    await _distribute(empty_db_url)
    # In one run, 0009's index build may still hold shard locks when 0010's shard
    # commands (connections of their own) need them: then a clear error after a
    # bounded wait, nothing changed, never a hang (it hung before the bound).
    try:
        await upgrade(empty_db_url)
    except ConfigurationError as exc:
        assert "run this revision on its own" in str(exc)
        engine = create_engine(empty_db_url)
        try:
            assert await current_revision(engine) == DISTRIBUTED_AT
        finally:
            await engine.dispose()
        # The documented procedure: 0010 in a run of its own.
        for revision in ("0009", "0010", "head"):
            await upgrade(empty_db_url, revision)

    engine = create_engine(empty_db_url)
    try:
        assert await current_revision(engine) == head_revision()
    finally:
        await engine.dispose()
    # The documented step after a revision that creates tables: apply again; it
    # distributes exactly the new ones.
    ran = await apply_citus(empty_db_url)
    assert {s.split("'")[1] for s in ran if "create_distributed_table" in s} == CREATED_LATER
    assert await apply_citus(empty_db_url) == []
    engine = create_engine(empty_db_url)
    try:
        async with engine.connect() as conn:
            for table in VECTOR_TABLES:
                # Every shard's vectors are stored in the row, as on one PostgreSQL.
                storages = (
                    await conn.execute(
                        text(
                            "SELECT DISTINCT result FROM run_command_on_shards("
                            "CAST(:t AS regclass), $$SELECT attstorage FROM pg_attribute "
                            "WHERE attrelid = '%s'::regclass AND attname = 'embedding'$$)"
                        ),
                        {"t": table},
                    )
                ).scalars()
                assert list(storages) == ["m"], table
    finally:
        await engine.dispose()

    # The upgraded cluster serves the library: columns and indexes of the later
    # revisions exist on the shards.
    async with MemoryStore.open(empty_db_url) as store:
        await store.remember(Episode(user_id="ann", session_id="s", input="green tea"))
        assert [e.input for e in await store.recall("tea", user_id="ann")] == ["green tea"]
