"""The per-call reads on the driver (memstore.db.prepared): same answers, same guarantees.

Each read is made twice on the same data, once on the driver and once through
SQLAlchemy's execute (``through_sqlalchemy``), and must return equal objects;
the observers prove which path ran. Driver errors on the hot path arrive as the
MemstoreError the SQLAlchemy path gives, the tenant audit and the slow-statement
log see the statements it sends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, event, make_url, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.util import greenlet_spawn

from memstore import Fact, MemoryStore
from memstore.db.engine import create_engine
from memstore.db.errors import translated
from memstore.db.observers import Executed, observe
from memstore.db.prepared import through_sqlalchemy
from memstore.db.unit import Database
from memstore.errors import MemstoreError, SchemaOutOfDate, Unavailable
from memstore.models import FactRow
from memstore.recall import RecallTuning
from memstore.repositories import fact_reads
from memstore.repositories.fact_reads import FACT_COLUMNS
from tests.conftest import is_postgres
from tests.store_parts import store_with_parts
from tests.tenant_audit import TenantAudit
from tests.test_recall_statement import T0, FixedEmbedder, episodes

Read = Callable[[MemoryStore], Awaitable[Any]]

READS: list[tuple[str, Read]] = [
    ("facts", lambda s: s.facts(user_id="alice")),
    ("facts(subject)", lambda s: s.facts(user_id="alice", subject="alice", predicate="lives_in")),
    ("facts(as of)", lambda s: s.facts(user_id="alice", valid_at=T0 + timedelta(days=15))),
    ("facts(limit)", lambda s: s.facts(user_id="alice", valid_at=T0 + timedelta(days=99), limit=1)),
    ("fact_history", lambda s: s.fact_history(user_id="alice")),
    ("fact_history(subject)", lambda s: s.fact_history(user_id="alice", subject="alice")),
    ("recall_scored", lambda s: s.recall_scored("v3 v17", user_id="alice", limit=8)),
    ("recall", lambda s: s.recall("v42", user_id="alice", limit=5)),
    ("recall_facts_scored", lambda s: s.recall_facts_scored("lives city", user_id="alice")),
    ("recall_facts", lambda s: s.recall_facts("works", user_id="alice", limit=2)),
    ("working", lambda s: s.working(user_id="alice")),
    ("session_messages", lambda s: s.session_messages("s3", user_id="alice", limit=6)),
]


async def _seed(store: MemoryStore) -> None:
    await store.remember_many(episodes("alice", range(60)))
    await store.remember_many(episodes("bob", range(60, 90)))
    for i, city in enumerate(("Paris", "Berlin", "Rome", "Oslo")):
        await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="lives_in",
                object=f"{city} city",
                valid_from=T0 + timedelta(days=10 * i),
                sources=(f"s{i}",),
            )
        )
    await store.add_fact(
        Fact(user_id="alice", subject="alice", predicate="works_at", object="the works")
    )
    await store.add_fact(Fact(user_id="bob", subject="bob", predicate="lives_in", object="Rome"))
    await store.update_block("persona", "likes tea", user_id="alice")
    await store.update_block("goals", "learn Greek", user_id="alice")
    await store.update_block("persona", "likes coffee", user_id="bob")


@contextmanager
def hot_statements() -> Iterator[list[Executed]]:
    seen: list[Executed] = []
    unobserve = observe(after=seen.append)
    try:
        yield seen
    finally:
        unobserve()


async def _both_paths(store: MemoryStore) -> None:
    for label, read in READS:
        await read(store)  # caches warm (Postgres: the tenant's size; SQLite: vectors)
        with hot_statements() as hot:
            fast = await read(store)
        with hot_statements() as none, through_sqlalchemy():
            slow = await read(store)
        assert fast, label
        assert fast == slow, label
        assert hot and not any(e.failed for e in hot), f"{label}: not on the driver"
        assert none == [], f"{label}: through_sqlalchemy still used the driver"
    for label, read in OTHER_READS:
        fast = await read(store)
        with through_sqlalchemy():
            assert fast and fast == await read(store), label


# Reads on the same checkout that run through SQLAlchemy (no statement of the driver's).
OTHER_READS: list[tuple[str, Read]] = [
    ("recall_facts(empty query)", lambda s: s.recall_facts("", user_id="alice")),
]


@pytest.mark.parametrize("tuning", ["hybrid", "dense-only"])
async def test_driver_and_sqlalchemy_return_the_same(db_url: str, tuning: str) -> None:
    dense_only = RecallTuning(keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0)
    options: dict[str, Any] = {} if tuning == "hybrid" else {"recall_tuning": dense_only}
    async with MemoryStore.open(db_url, embedder=FixedEmbedder(), **options) as store:
        await _seed(store)
        await _both_paths(store)


async def test_rls_reads_run_on_the_driver_in_their_transaction(db_url: str, backend: str) -> None:
    """rls=True: the read joins the transaction that names the tenant, on the driver."""
    if not is_postgres(backend):
        pytest.skip("row-level security is PostgreSQL's")
    async with MemoryStore.open(db_url, embedder=FixedEmbedder(), rls=True) as store:
        await _seed(store)
        await _both_paths(store)


async def test_a_bound_store_reads_through_its_callers_session(db_url: str) -> None:
    """store.bind(session): the caller's connection is not memstore's; same answers."""
    engine = create_engine(db_url)
    try:
        async with MemoryStore.open(db_url, embedder=FixedEmbedder()) as store:
            await _seed(store)
            async with AsyncSession(engine) as session:
                bound = store.bind(session)
                for label, read in READS:
                    with hot_statements() as hot:
                        via_caller = await read(bound)  # type: ignore[arg-type]
                    assert hot == [], f"{label}: a caller's session went to the driver"
                    assert via_caller == await read(store), label
                await session.rollback()
    finally:
        await engine.dispose()


# A fact history that takes seconds on the server, for errors that need a running query.
_SLOW_HISTORY = select(*FACT_COLUMNS).where(
    FactRow.user_id == bindparam("user_id"), text("EXISTS (SELECT FROM pg_sleep(3))")
)


async def _terminate_the_sleeper(url: str) -> None:
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            for _ in range(300):
                ended = await conn.scalar(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND state = 'active' "
                        "AND query LIKE '%pg_sleep(3)%' AND pid <> pg_backend_pid()"
                    )
                )
                if ended:
                    return
                await asyncio.sleep(0.01)
    finally:
        await admin.dispose()
    raise AssertionError("the slow read never started")


@pytest.mark.parametrize("fault", ["statement timeout", "connection lost"])
async def test_a_driver_error_is_the_same_memstore_error(
    db_url: str, backend: str, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement cancelled by statement_timeout, or its connection ended mid-query."""
    if not is_postgres(backend):
        pytest.skip("SQLite has no server to cancel or end a statement")
    timeout = {"server_settings": {"statement_timeout": "1500"}}
    options = {"connect_args": timeout} if fault == "statement timeout" else {}
    errors: dict[str, BaseException] = {}
    async with MemoryStore.open(db_url, engine_options=options) as store:
        await _seed(store)
        monkeypatch.setattr(fact_reads, "_history_statement", lambda *_: _SLOW_HISTORY)
        for path in ("driver", "sqlalchemy"):
            with hot_statements() as hot, pytest.raises(MemstoreError) as caught:
                with through_sqlalchemy() if path == "sqlalchemy" else nullcontext():
                    read = store.fact_history(user_id="alice")
                    if fault == "connection lost":
                        await asyncio.gather(read, _terminate_the_sleeper(db_url))
                    else:
                        await read
            errors[path] = caught.value
            assert [e.failed for e in hot] == ([True] if path == "driver" else [])
            assert await store.facts(user_id="alice")  # the pool replaced what was lost
    assert type(errors["driver"]) is type(errors["sqlalchemy"]) is Unavailable, errors
    assert str(errors["driver"]) == str(errors["sqlalchemy"])


async def test_a_driver_error_is_translated_as_before(db_url: str, backend: str) -> None:
    """A statement the database refuses (its table renamed away): the same MemstoreError."""
    admin = create_engine(db_url)
    errors: dict[str, BaseException] = {}
    try:
        async with MemoryStore.open(db_url) as store:
            await _seed(store)
            async with admin.begin() as conn:
                await conn.execute(text("ALTER TABLE facts RENAME TO facts_away"))
            try:
                for path in ("driver", "sqlalchemy"):
                    with pytest.raises(Exception) as caught:
                        if path == "driver":
                            await store.fact_history(user_id="alice")
                        else:
                            with through_sqlalchemy():
                                await store.fact_history(user_id="alice")
                    errors[path] = caught.value
            finally:
                async with admin.begin() as conn:
                    await conn.execute(text("ALTER TABLE facts_away RENAME TO facts"))
    finally:
        await admin.dispose()
    assert type(errors["driver"]) is type(errors["sqlalchemy"]), errors
    assert str(errors["driver"]).split(" [SQL")[0] == str(errors["sqlalchemy"]).split(" [SQL")[0]
    assert type(errors["driver"].__cause__) is type(errors["sqlalchemy"].__cause__)
    assert isinstance(errors["driver"], SchemaOutOfDate)


async def test_the_audit_reports_an_unfiltered_statement_on_the_driver(
    db_url: str, tenant_audit: TenantAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library read that forgets user_id is reported though it bypasses the Engine."""
    unfiltered = select(*FACT_COLUMNS).where(FactRow.object != bindparam("user_id"))
    async with MemoryStore.open(db_url) as store:
        await _seed(store)
        tenant_audit.take()
        monkeypatch.setattr(fact_reads, "_history_statement", lambda *_: unfiltered)
        with hot_statements() as hot:
            await store.fact_history(user_id="alice")
        found = tenant_audit.take()
    assert len(hot) == 1
    assert [v.sql for v in found] == [hot[0].sql], found
    assert found[0].origin.startswith("library:memstore/repositories/fact_reads.py:")
    assert found[0].problems == ("facts: no filter on user_id",)


async def test_the_slow_statement_log_sees_the_driver_reads(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memstore")
    async with MemoryStore.open(db_url, engine_options={"slow_query_ms": 0}) as store:
        await _seed(store)
        caplog.clear()
        with hot_statements() as hot:
            await store.facts(user_id="alice", subject="alice")
    logged = [r.getMessage() for r in caplog.records if r.name == "memstore.db.slowlog"]
    assert len(hot) == 1
    assert any(" ".join(hot[0].sql.split())[:200] in m for m in logged), logged
    assert not any("alice" in m for m in logged)  # the SQL, never the values


async def test_a_sqlite_read_of_one_statement_is_one_thread_hop(db_url: str, backend: str) -> None:
    """aiosqlite runs each call on its thread; the read needs only the statement's."""
    if backend != "sqlite":
        pytest.skip("aiosqlite's thread hops")
    hops: list[str] = []
    async with store_with_parts(db_url) as parts:
        store = parts.store
        await _seed(store)

        def count(dbapi_connection: Any, *_: Any) -> None:
            driver = dbapi_connection.driver_connection
            if getattr(driver, "_counted", False):
                return
            run = driver._execute  # noqa: SLF001  (aiosqlite runs every call through it)

            async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
                hops.append(getattr(fn, "__name__", repr(fn)))
                return await run(fn, *args, **kwargs)

            driver._execute, driver._counted = counted, True  # noqa: SLF001

        event.listen(parts.engine.sync_engine, "checkout", count)
        for read in (
            lambda: store.facts(user_id="alice", subject="alice"),
            lambda: store.fact_history(user_id="alice"),
        ):
            await read()  # every pooled connection counted from here on
            hops.clear()
            assert await read()
            assert len(hops) == 1, hops


async def test_sqlite_connections_returned_inside_a_transaction_are_rolled_back(
    db_url: str, backend: str
) -> None:
    """Returned connections are rolled back only when a transaction is open: then they are."""
    if backend != "sqlite":
        pytest.skip("the SQLite pool's reset")
    engine = create_engine(db_url, pool_size=1, max_overflow=0)
    other = create_engine(db_url, sqlite_busy_timeout_ms=0)
    try:
        pooled = await greenlet_spawn(engine.sync_engine.pool.connect)
        driver = pooled.driver_connection
        await driver.execute("BEGIN IMMEDIATE")
        assert driver.in_transaction
        await greenlet_spawn(pooled.close)
        again = await greenlet_spawn(engine.sync_engine.pool.connect)
        assert again.driver_connection is driver
        assert not again.driver_connection.in_transaction
        await greenlet_spawn(again.close)
        async with other.begin() as conn:  # the write lock was released
            await conn.execute(text("CREATE TABLE scratch (x)"))
    finally:
        await engine.dispose()
        await other.dispose()


async def test_a_failed_checkout_raises_what_sqlalchemys_would(
    db_url: str, backend: str, tmp_path: Path
) -> None:
    """The pool cannot connect (no such database; a file that is not one): same error."""
    if is_postgres(backend):
        url = make_url(db_url).set(database="memstore_no_such_database")
    else:
        garbage = tmp_path / "not-a-database.db"
        garbage.write_bytes(b"this is not a SQLite file, " * 100)
        url = make_url(f"sqlite+aiosqlite:///{garbage}")
    engine = create_engine(url.render_as_string(hide_password=False))
    try:
        with pytest.raises(MemstoreError) as on_driver:
            async with Database(engine).statement("alice"):
                pass
        with pytest.raises(MemstoreError) as through_core, translated("read"):
            async with engine.connect():
                pass
    finally:
        await engine.dispose()
    assert type(on_driver.value) is type(through_core.value), (on_driver.value, through_core.value)
    assert str(on_driver.value) == str(through_core.value)
