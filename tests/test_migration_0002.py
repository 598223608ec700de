"""Revision 0002 on a populated core database: upgrade keeps every row, downgrade reverses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, Table, inspect, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection

import memstore.models  # noqa: F401  (registers every table)
from memstore import MemoryStore
from memstore.db.base import Base
from memstore.db.engine import create_engine
from memstore.schema.migrate import downgrade, include_object, upgrade

CORE_TABLES = ("episodes", "facts", "blocks", "block_versions")
NEW_TABLES = {"threads", "slots", "working_memory", "working_memory_checkpoints"}


def _snapshot(connection: Connection, columns: dict[str, list[str]] | None) -> dict[str, Any]:
    """Every core row, in primary-key order, restricted to the columns the core revision had."""
    metadata = MetaData()
    out: dict[str, Any] = {}
    for name in CORE_TABLES:
        table = Table(name, metadata, autoload_with=connection)
        wanted = columns[name] if columns else [c.name for c in table.columns]
        stmt = select(*(table.c[c] for c in wanted)).order_by(*table.primary_key.columns)
        out[name] = {"columns": wanted, "rows": [tuple(r) for r in connection.execute(stmt).all()]}
    return out


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


def _drift(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"include_object": include_object})
    return list(compare_metadata(context, Base.metadata))


def _core_rows(naive: bool) -> dict[str, list[dict[str, Any]]]:
    """Rows as revision 0001 stored them (written with its columns, not today's code)."""

    def ts(month: int, day: int = 1) -> datetime:
        value = datetime(2026, month, day, 9, 30, tzinfo=UTC)
        return value.replace(tzinfo=None) if naive else value

    episodes = [
        {
            "user_id": "alice",
            "id": f"00000000-0000-0000-0000-00000000000{n}",
            "session_id": f"s{n % 2}",
            "input": f"turn {n}",
            "output": "ok",
            "tool_calls": [{"tool": "x"}],
            "metadata": {"n": n},
            "occurred_at": ts(1, n + 1),
            "created_at": ts(1, n + 1),
        }
        for n in range(5)
    ] + [
        {
            "user_id": "__anonymous__",
            "id": "00000000-0000-0000-0000-000000000009",
            "session_id": "s",
            "input": "anonymous turn",
            "output": "",
            "tool_calls": [],
            "metadata": {},
            "occurred_at": ts(2),
            "created_at": ts(2),
        }
    ]
    fact = {
        "user_id": "alice",
        "subject": "alice",
        "predicate": "lives_in",
        "single_valued": True,
        "confidence": 1.0,
        "sources": [],
    }
    facts = [
        {
            **fact,
            "id": "f1",
            "fact_id": "f1",
            "object": "Paris",
            "valid_from": ts(3),
            "valid_to": None,
            "recorded_at": ts(3),
            "superseded_at": ts(6),
        },
        {
            **fact,
            "id": "f2",
            "fact_id": "f1",
            "object": "Paris",
            "valid_from": ts(3),
            "valid_to": ts(6),
            "recorded_at": ts(6),
            "superseded_at": None,
        },
        {
            **fact,
            "id": "f3",
            "fact_id": "f3",
            "object": "London",
            "valid_from": ts(6),
            "valid_to": None,
            "recorded_at": ts(6),
            "superseded_at": None,
        },
    ]
    blocks = [
        {
            "user_id": "alice",
            "name": "persona",
            "content": "Be brief. Metric.",
            "pinned_order": 0,
            "version": 2,
            "updated_at": ts(7),
        }
    ]
    versions = [
        {
            "user_id": "alice",
            "name": "persona",
            "version": 1,
            "content": "Be brief.",
            "created_at": ts(7),
        },
        {
            "user_id": "alice",
            "name": "persona",
            "version": 2,
            "content": "Be brief. Metric.",
            "created_at": ts(7),
        },
    ]
    return {"episodes": episodes, "facts": facts, "blocks": blocks, "block_versions": versions}


def _insert_core_rows(connection: Connection) -> None:
    metadata = MetaData()
    naive = connection.dialect.name == "sqlite"
    for name, rows in _core_rows(naive).items():
        table = Table(name, metadata, autoload_with=connection)
        connection.execute(table.insert(), rows)


async def _populate(url: str) -> None:
    # The schema is behind the code on purpose: write rows as the core revision
    # would have, through reflected tables, not through today's MemoryStore.
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_insert_core_rows)
    finally:
        await engine.dispose()


async def test_upgrade_from_core_keeps_every_row_and_downgrade_reverses(
    empty_db_url: str,
) -> None:
    url = empty_db_url
    await upgrade(url, "0001")
    await _populate(url)
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            before = await conn.run_sync(_snapshot, None)
            assert not NEW_TABLES & await conn.run_sync(_tables)
        assert len(before["episodes"]["rows"]) == 6 and len(before["facts"]["rows"]) == 3
        assert len(before["block_versions"]["rows"]) == 2
        columns = {name: snap["columns"] for name, snap in before.items()}

        await upgrade(url)
        async with engine.connect() as conn:
            assert await conn.run_sync(_snapshot, columns) == before
            assert NEW_TABLES <= await conn.run_sync(_tables)
            assert await conn.run_sync(_drift) == []  # models and migrations agree

        async with MemoryStore.open(url) as store:
            slot = await store.threads.append(
                "t", {"x": 1}, from_id="a", to_id="b", user_id="alice"
            )
            assert slot.index == 0
            await store.working_memory(session_id="s1", user_id="alice").set("k", 1)
            assert len(await store.recall("turn", user_id="alice", limit=10)) == 5
        with pytest.raises(sa_exc.DBAPIError, match="append-only"):
            async with engine.begin() as conn:
                await conn.execute(text("UPDATE slots SET to_id = 'z'"))

        await downgrade(url, "0001")
        async with engine.connect() as conn:
            assert await conn.run_sync(_snapshot, columns) == before
            assert not NEW_TABLES & await conn.run_sync(_tables)

        # And up again on top of the downgraded database (trigger/function recreated cleanly).
        await upgrade(url)
        async with MemoryStore.open(url) as store:
            assert await store.threads.get_thread("t", user_id="alice") == []
            slot = await store.threads.append("t", {}, from_id="a", to_id="b", user_id="alice")
            assert slot.index == 0
    finally:
        await engine.dispose()
