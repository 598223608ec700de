"""Every write path stores facts with an embedding, so dense recall finds them at once.

"Berlln" shares no word with "Berlin": the keyword part cannot find the fact, only
the dense part (the hashing embedder's character trigrams) can.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Episode, Fact, MemoryStore
from memstore.core.documents import fact_text
from memstore.core.tenancy import storage_user_id
from memstore.embeddings.identity import embedder_identity
from memstore.models import EpisodeRow, FactRow

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)


async def fact_rows(engine: AsyncEngine, user: str) -> list[Any]:
    async with engine.connect() as conn:
        stmt = select(
            FactRow.subject,
            FactRow.predicate,
            FactRow.object,
            FactRow.superseded_at,
            FactRow.valid_to,
            FactRow.embedding,
        ).where(FactRow.user_id == storage_user_id(user))
        return list((await conn.execute(stmt)).all())


async def assert_all_embedded(store: MemoryStore, engine: AsyncEngine, user: str) -> None:
    rows = await fact_rows(engine, user)
    assert rows
    for row in rows:
        assert row.embedding is not None, f"fact row {row.object!r} has no embedding"
        vector = np.asarray(row.embedding, dtype=np.float32)
        (expected,) = await store.embedder.embed(
            [fact_text(Fact(subject=row.subject, predicate=row.predicate, object=row.object))]
        )
        assert np.allclose(vector, expected, atol=1e-5)


async def assert_berlin_found_densely(store: MemoryStore, user: str) -> None:
    found = await store.recall_facts("Berlln", user_id=user)
    assert [(f.predicate, f.object) for f in found] == [("lives_in", "Berlin")]
    ctx = await store.context(user_id=user, query="Berlln")
    assert any("Berlin" in item.text for item in ctx.facts)
    tool = await store.call_tool(
        "search_memory", {"query": "Berlln", "kind": "facts"}, user_id=user
    )
    assert [r["text"] for r in tool["results"] if "Berlin" in r["text"]]


async def test_consolidated_fact_is_embedded_and_found(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    await store.remember(
        Episode(session_id="s", user_id="ann", input="I live in Berlin", occurred_at=MARCH)
    )
    result = await store.consolidate(user_id="ann")
    assert result.added == 1
    await assert_all_embedded(store, engine, "ann")
    await assert_berlin_found_densely(store, "ann")


async def test_consolidation_supersession_and_reinforcement_rows_are_embedded(
    engine: AsyncEngine,
    store: MemoryStore,
) -> None:
    await store.remember_many(
        [
            Episode(session_id="s", user_id="bob", input="I live in Paris", occurred_at=MARCH),
            Episode(session_id="s", user_id="bob", input="I live in Paris", occurred_at=MARCH),
            Episode(session_id="s", user_id="bob", input="I live in Berlin", occurred_at=JUNE),
        ]
    )
    result = await store.consolidate(user_id="bob")
    assert (result.reinforced, result.superseded) == (1, 1)
    assert len(await fact_rows(engine, "bob")) >= 4  # versions: added, reinforced, cut, new
    await assert_all_embedded(store, engine, "bob")
    await assert_berlin_found_densely(store, "bob")


async def test_add_fact_and_remember_fact_tool_are_embedded(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    await store.add_fact(
        Fact(user_id="cat", subject="cat", predicate="lives_in", object="Berlin", valid_from=MARCH)
    )
    await store.call_tool(
        "remember_fact",
        {"subject": "dan", "predicate": "lives_in", "object": "Berlin"},
        user_id="dan",
    )
    for user in ("cat", "dan"):
        await assert_all_embedded(store, engine, user)
        await assert_berlin_found_densely(store, user)


async def test_copies_of_rows_written_without_embedding_are_embedded(
    engine: AsyncEngine,
    store: MemoryStore,
) -> None:
    # Rows from before facts were embedded (or never re-embedded) have NULL
    # embeddings; every version derived from them must get one.
    await store.add_fact(
        Fact(
            user_id="eve",
            subject="eve",
            predicate="lives_in",
            object="Paris",
            valid_from=MARCH,
            confidence=0.5,
        )
    )
    async with engine.begin() as conn:
        await conn.execute(update(FactRow).where(FactRow.user_id == "eve").values(embedding=None))
    # Reinforcement: a new version of the same statement.
    await store.add_fact(
        Fact(
            user_id="eve",
            subject="eve",
            predicate="lives_in",
            object="Paris",
            valid_from=MARCH,
            confidence=0.5,
        )
    )
    # Correction: the old value's copy cut at June, next to the new value.
    await store.add_fact(
        Fact(user_id="eve", subject="eve", predicate="lives_in", object="Berlin", valid_from=JUNE)
    )
    rows = await fact_rows(engine, "eve")
    assert sum(1 for r in rows if r.embedding is None) == 1  # only the legacy row itself
    derived = [r for r in rows if r.embedding is not None]
    assert {(r.object, r.valid_to is not None) for r in derived} >= {
        ("Paris", True),
        ("Berlin", False),
    }
    paris = await store.recall_facts("Pariss", user_id="eve", valid_at=MARCH)
    assert [f.object for f in paris] == ["Paris"]


async def test_import_embeds_rows_without_embedding(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    await store.remember(
        Episode(session_id="s", user_id="fay", input="I live in Berlin", occurred_at=MARCH)
    )
    await store.consolidate(user_id="fay")
    dump = await store.export(user_id="fay")
    for table in ("episodes", "facts"):
        for row in dump["tables"][table]:
            row.pop("embedding", None)
    await store.import_(dump, user_id="gus")
    await assert_all_embedded(store, engine, "gus")
    await assert_berlin_found_densely(store, "gus")
    async with engine.connect() as conn:
        missing = (
            await conn.execute(
                select(EpisodeRow.id).where(
                    EpisodeRow.user_id == "gus", EpisodeRow.embedding.is_(None)
                )
            )
        ).all()
    assert missing == []


async def test_import_recomputes_embeddings_of_another_embedder(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    await store.add_fact(
        Fact(user_id="hal", subject="hal", predicate="lives_in", object="Berlin", valid_from=MARCH)
    )
    dump = await store.export(user_id="hal")
    assert dump["embedder"] == embedder_identity(store.embedder)
    foreign = [1.0] + [0.0] * (store.embedder.dim - 1)
    for row in dump["tables"]["facts"]:
        row["embedding"] = foreign
    dump["embedder"] = "some-other-model"
    await store.import_(dump, user_id="ivy")
    await assert_all_embedded(store, engine, "ivy")
    # Same embedder: the dump's vectors are kept as they are.
    dump["embedder"] = embedder_identity(store.embedder)
    await store.import_(dump, user_id="jay")
    (row,) = await fact_rows(engine, "jay")
    assert np.allclose(np.asarray(row.embedding, dtype=np.float32), foreign)
