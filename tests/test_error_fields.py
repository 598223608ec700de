"""Integrity errors carry the violated constraint and its table (both backends): a key
violation is Conflict, a CHECK violation InvalidInput — never a raw driver error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from store_parts import own_engine

from memstore import (
    Conflict,
    DatabaseError,
    Episode,
    Fact,
    InvalidInput,
    MemoryStore,
    SchemaOutOfDate,
)
from memstore.db.errors import translated
from memstore.models import FactRow


async def test_a_duplicate_key_is_a_conflict_naming_constraint_and_table(
    store: MemoryStore,
) -> None:
    episode = Episode(user_id="u", session_id="s", input="once")
    await store.remember(episode)
    with pytest.raises(Conflict) as caught:
        await store.remember(episode)
    assert caught.value.table == "episodes"
    assert caught.value.constraint == "pk_episodes"
    assert "pk_episodes" in str(caught.value)


async def test_a_check_violation_is_invalid_input_naming_constraint_and_table(
    engine: AsyncEngine,
    store: MemoryStore,
) -> None:
    now = datetime.now(UTC)
    row = {
        "user_id": "u",
        "id": "f1",
        "fact_id": "f1",
        "single_valued": False,
        "subject": "u",
        "predicate": "likes",
        "object": "tea",
        "confidence": 2.0,  # the API refuses this before SQL; the database must too
        "sources": [],
        "valid_from": now,
        "recorded_at": now,
    }
    with pytest.raises(InvalidInput) as caught:
        with translated("insert fact"):
            async with engine.begin() as conn:
                await conn.execute(FactRow.__table__.insert().values(**row))
    assert not isinstance(caught.value, Conflict)
    assert caught.value.table == "facts"
    assert caught.value.constraint == "ck_facts_confidence_range"


async def test_a_serialisation_style_conflict_has_no_constraint() -> None:
    plain = Conflict("concurrent transaction conflict; retry")
    assert plain.constraint is None and plain.table is None


async def test_a_missing_required_value_is_invalid_input(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    with pytest.raises(InvalidInput) as caught:
        with translated("insert fact"):
            async with engine.begin() as conn:
                await conn.execute(
                    FactRow.__table__.insert().values(
                        user_id="u", id="f2", fact_id="f2", subject="u", predicate="p"
                    )
                )
    assert caught.value.table == "facts"


async def test_a_missing_table_or_column_is_schema_out_of_date(
    empty_db_url: str, backend: str
) -> None:
    # A database an operator changed by hand (or restored from an older dump) under a
    # running store: the driver's "undefined" error says to migrate, it is no raw error.
    async with MemoryStore.open(empty_db_url, auto_migrate=True) as store:
        await store.add_fact(Fact(user_id="u", subject="u", predicate="city", object="Oslo"))
        async with own_engine(empty_db_url) as engine, engine.begin() as conn:
            await conn.execute(text("ALTER TABLE facts RENAME COLUMN object TO object_value"))
        with pytest.raises(SchemaOutOfDate, match="memstore migrate"):
            await store.facts(user_id="u", subject="u")
        async with own_engine(empty_db_url) as engine, engine.begin() as conn:
            await conn.execute(text("ALTER TABLE episodes RENAME TO episodes_old"))
        with pytest.raises(SchemaOutOfDate, match="memstore migrate"):
            await store.remember(Episode(user_id="u", session_id="s", input="hello"))


async def test_a_refusal_no_class_names_is_a_database_error(
    empty_db_url: str, backend: str
) -> None:
    # An operator's trigger refusing writes with its own SQLSTATE (PL/pgSQL; a trigger
    # on a Citus table needs the cluster's unsafe-trigger setting).
    if backend != "postgres":
        pytest.skip("a PL/pgSQL trigger on a plain PostgreSQL table")
    async with MemoryStore.open(empty_db_url, auto_migrate=True) as store:
        async with own_engine(empty_db_url) as engine, engine.begin() as conn:
            await conn.execute(
                text(
                    "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'writes are frozen' USING ERRCODE = 'P0001'; END $$"
                )
            )
            await conn.execute(
                text(
                    "CREATE TRIGGER frozen BEFORE INSERT ON episodes "
                    "FOR EACH ROW EXECUTE FUNCTION refuse()"
                )
            )
        with pytest.raises(DatabaseError, match="writes are frozen") as caught:
            await store.remember(Episode(user_id="u", session_id="s", input="hello"))
        assert caught.value.sqlstate == "P0001"
        assert await store.recall("hello", user_id="u") == []
