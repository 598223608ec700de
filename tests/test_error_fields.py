"""Integrity errors carry the violated constraint and its table (both backends): a key
violation is Conflict, a CHECK violation InvalidInput — never a raw driver error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Conflict, Episode, InvalidInput, MemoryStore
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
