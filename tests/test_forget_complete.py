"""GDPR erasure is complete: after forget(user_id=X) no table holds a row of X.

Checked by scanning every table of the metadata *and* of the live database
catalog that has a ``user_id`` column, so a table added later is covered without
anyone listing it here. Tables the facade cannot fill yet get a synthesised row.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Enum,
    Float,
    Integer,
    Numeric,
    String,
    Table,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.types import TypeDecorator

from memstore import Episode, Fact, MemoryStore
from memstore.db.base import Base
from memstore.db.scrub import truncate_wal
from memstore.repositories.tenants import tenant_tables
from tests.test_export_import import populate

VICTIM, BYSTANDER = "victim", "bystander"


def secret_word(user: str) -> str:
    """A word only ``user``'s data contains; searched for in raw storage after forget."""
    return f"qz{user}secretword"


def residue_marker(user: str) -> bytes:
    # FTS5 leaves store terms prefix-compressed against the previous term (here
    # the other tenant's "qz…"), so search for the part after the shared prefix.
    return f"{user}secretword".encode()


async def populate_everything(store: MemoryStore, url: str, user: str) -> None:
    await populate(store, url, user)
    secret = secret_word(user)
    await store.remember(
        Episode(user_id=user, session_id="s9", input=f"more {secret}", output=f"said {secret}")
    )
    await store.add_fact(Fact(user_id=user, subject="x", predicate="likes", object="y"))
    await store.add_fact(Fact(user_id=user, subject=secret, predicate="likes", object=secret))
    await store.update_block("notes", f"remember {secret}", user_id=user)
    await store.update_block("notes", "overwritten", user_id=user)
    wm = store.working_memory(session_id="s9", user_id=user)
    await wm.set("k", {"v": secret})
    # Features of later issues, through their public API when present (SPEC names).
    threads = getattr(store, "threads", None)
    if threads is not None:
        await threads.append("t1", {"text": "hello"}, from_id="a", to_id="b", user_id=user)
        await threads.append("t9", {"text": secret}, from_id="a", to_id="b", user_id=user)


def _base_type(column: Any) -> Any:
    kind = column.type
    while isinstance(kind, TypeDecorator):
        kind = kind.impl_instance
    return kind


def _synthetic(column: Any, n: int) -> Any:
    kind = _base_type(column)
    if isinstance(kind, Enum):
        return kind.enums[0]
    if isinstance(kind, Boolean):
        return False
    if isinstance(kind, Integer):
        return n
    if isinstance(kind, Float | Numeric):
        return 0.5
    if isinstance(kind, String):
        return f"synthetic-{n}"[: kind.length or 64]
    try:
        python_type = kind.python_type
    except NotImplementedError:
        python_type = None
    if python_type is datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)
    if python_type is bytes:
        return b"\x01"
    return {}  # JSON documents


async def synthesise_row(engine: AsyncEngine, table: Table, user: str) -> None:
    """One plausible row of ``table`` for ``user``; parents' keys copied from their rows."""
    row: dict[str, Any] = {}
    async with engine.begin() as conn:
        for fk in table.foreign_key_constraints:
            parent = fk.referred_table
            found = (
                (await conn.execute(select(parent).where(parent.c.user_id == user).limit(1)))
                .mappings()
                .first()
            )
            assert found is not None, f"{table.name}: no {parent.name} row of {user} to refer to"
            for element in fk.elements:
                row[element.parent.name] = found[element.column.name]
        for n, column in enumerate(table.columns):
            if column.name in row:
                continue
            if column.name == "user_id":
                row["user_id"] = user
            elif column.nullable and not column.primary_key:
                row[column.name] = None
            elif column.default is None and column.server_default is None:
                row[column.name] = _synthetic(column, n)
        await conn.execute(table.insert().values(**row))


async def rows_of(engine: AsyncEngine, user: str) -> dict[str, int]:
    """Rows of ``user`` in every table that has a user_id column, per the live catalog."""
    counts: dict[str, int] = {}
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda c: inspect(c).get_table_names())
        for name in names:
            columns = await conn.run_sync(lambda c, n=name: inspect(c).get_columns(n))
            if any(c["name"] == "user_id" for c in columns):
                quoted = conn.dialect.identifier_preparer.quote(name)
                counts[name] = int(
                    await conn.scalar(
                        text(f"SELECT count(*) FROM {quoted} WHERE user_id = :u"), {"u": user}
                    )
                )
    return counts


async def test_forget_leaves_no_row_of_the_tenant_anywhere(
    engine: AsyncEngine, store: MemoryStore, db_url: str
) -> None:
    metadata_tenant_tables = {t.name for t in Base.metadata.sorted_tables if "user_id" in t.c}
    assert metadata_tenant_tables == {t.name for t in tenant_tables()}
    for user in (VICTIM, BYSTANDER):
        await populate_everything(store, db_url, user)
        for table in tenant_tables():
            async with engine.connect() as conn:
                has = await conn.scalar(
                    select(func.count()).select_from(table).where(table.c.user_id == user)
                )
            if not has:
                await synthesise_row(engine, table, user)

    before = {u: await rows_of(engine, u) for u in (VICTIM, BYSTANDER)}
    # Every tenant table of the metadata exists in the database and has rows of both.
    assert metadata_tenant_tables <= set(before[VICTIM])
    assert all(before[VICTIM].values()) and all(before[BYSTANDER].values()), before

    removed = await store.forget(user_id=VICTIM)

    # forget counts rows of the metadata's tenant tables; backend-only index side
    # tables (SQLite FTS) follow by trigger and are checked by the scan below.
    assert removed == sum(n for name, n in before[VICTIM].items() if name in metadata_tenant_tables)
    after = {u: await rows_of(engine, u) for u in (VICTIM, BYSTANDER)}
    assert after[VICTIM] == dict.fromkeys(before[VICTIM], 0)
    assert after[BYSTANDER] == before[BYSTANDER]
    assert (await store.export(user_id=VICTIM))["tables"] == {
        t.name: [] for t in reversed(tenant_tables())
    }
    if store.backend == "sqlite":
        await assert_no_sqlite_residue(engine)


async def sqlite_tables_containing(engine: AsyncEngine, marker: bytes) -> list[str]:
    """Tables of sqlite_master (FTS5 shadow tables included) with a value holding ``marker``."""
    found = []
    async with engine.connect() as conn:
        names = (
            (await conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")))
            .scalars()
            .all()
        )
        for name in names:
            rows = (await conn.execute(text(f'SELECT * FROM "{name}"'))).all()
            if any(
                marker in (v if isinstance(v, bytes) else str(v).encode())
                for row in rows
                for v in row
                if v is not None
            ):
                found.append(name)
    return found


async def assert_no_sqlite_residue(engine: AsyncEngine) -> None:
    """Neither a table (shadow tables too) nor the file's bytes hold the victim's words."""
    assert await sqlite_tables_containing(engine, residue_marker(BYSTANDER)), (
        "the scan must see the bystander's words, else it proves nothing"
    )
    assert await sqlite_tables_containing(engine, residue_marker(VICTIM)) == []
    # forget checkpointed and truncated the write-ahead log: no old page images.
    wal = Path(f"{engine.url.database}-wal")
    wal_bytes = await asyncio.to_thread(lambda: wal.read_bytes() if wal.exists() else b"")
    assert residue_marker(VICTIM) not in wal_bytes
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        cursor = await raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert (await cursor.fetchone())[0] == 0  # not busy: the WAL is now empty
    path = engine.url.database
    assert path is not None
    data = await asyncio.to_thread(Path(path).read_bytes)
    assert residue_marker(BYSTANDER) in data
    assert data.count(residue_marker(VICTIM)) == 0
    # Not even the tenant id is left (in rows, index entries or freed space).
    assert BYSTANDER.encode() in data and VICTIM.encode() not in data


async def test_every_table_is_a_tenant_table_or_declared_global() -> None:
    """A new table without user_id must say it holds no personal data."""
    undeclared = [
        t.name
        for t in Base.metadata.sorted_tables
        if "user_id" not in t.c and not t.info.get("global")
    ]
    assert not undeclared, (
        f"tables {undeclared} have no user_id, so forget/export skip them; add user_id, "
        "or mark them __table_args__ = {'info': {'global': True}} if they hold no tenant data"
    )


async def test_forget_succeeds_while_a_reader_pins_the_wal(
    engine: AsyncEngine, store: MemoryStore, db_url: str
) -> None:
    """The post-erase checkpoint is best effort: a reader delays it, never fails forget."""
    if store.backend != "sqlite":
        return
    await populate_everything(store, db_url, VICTIM)
    path = engine.url.database
    assert path is not None
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM episodes").fetchone()  # holds a WAL snapshot
        assert await store.forget(user_id=VICTIM) > 0
        assert not any((await rows_of(engine, VICTIM)).values())
    finally:
        reader.close()
    assert await truncate_wal(engine)  # once the reader is gone it goes through
    wal = Path(f"{path}-wal")
    assert await asyncio.to_thread(lambda: wal.read_bytes() if wal.exists() else b"") == b""
