"""Fixtures: every storage test runs on SQLite and on a real PostgreSQL + pgvector.

PostgreSQL comes from the ``pgserver`` package (PostgreSQL 16 + pgvector binaries
on PyPI), started once per session in a temporary directory. Set
``MEMSTORE_TEST_PG_URL`` to use a server of your own instead (its database is
wiped). Select one backend with ``-m sqlite`` or ``-m postgres``.

With ``MEMSTORE_TEST_CITUS=1`` the same tests also run on a third backend,
``citus``: a private Citus cluster (coordinator + two workers, PostgreSQL 15,
from ``../shared/citus``; tests/citus_cluster.py) whose database is migrated and
then distributed with ``memstore citus --apply``'s function. ``-m citus`` selects
it alone. A test that checks something of PostgreSQL asks ``is_postgres(backend)``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import MemoryStore
from memstore.backends.postgresql.citus import apply_citus
from memstore.db.engine import create_engine
from memstore.db.observers import observe
from memstore.models import ConfigRow
from memstore.models.config import EMBEDDER_KEY
from memstore.repositories.tenants import tenant_tables
from memstore.schema.migrate import upgrade
from tests.citus_cluster import CitusCluster, citus_unavailable, private_citus_cluster
from tests.pg_servers import private_pgserver
from tests.store_parts import StoreParts, own_engine, store_with_parts
from tests.tenant_audit import TenantAudit

# The Citus stage: opt in, because the cluster needs root and ../shared/citus.
CITUS_ENABLED = os.environ.get("MEMSTORE_TEST_CITUS") == "1"
BACKENDS = [
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", marks=pytest.mark.postgres),
    *([pytest.param("citus", marks=pytest.mark.citus)] if CITUS_ENABLED else []),
]
# Backends whose database is PostgreSQL (Citus is PostgreSQL with the citus extension).
POSTGRES_BACKENDS = frozenset({"postgres", "citus"})


def is_postgres(backend: str) -> bool:
    """Whether ``backend``'s database is PostgreSQL (plain or distributed by Citus)."""
    return backend in POSTGRES_BACKENDS


_db_counter = itertools.count()


_AUDIT = TenantAudit()


@pytest.fixture(scope="session", autouse=True)
def tenant_audit() -> Iterator[TenantAudit]:
    """Judge every SQL statement of the run: a tenant table needs a user_id filter.

    Listening on the Engine class covers every engine, including the ones the
    library creates inside MemoryStore.open, migrations, RLS and the CLI.
    """
    event.listen(Engine, "before_cursor_execute", _AUDIT)
    # The per-call reads memstore sends to the driver, past the Engine's events.
    unobserve = observe(before=_AUDIT.hot_path)
    try:
        yield _AUDIT
    finally:
        unobserve()
        event.remove(Engine, "before_cursor_execute", _AUDIT)


@pytest.fixture(autouse=True)
def _no_cross_tenant_statement(tenant_audit: TenantAudit) -> Iterator[None]:
    # Statements since the previous test (this test's wider-scoped fixtures, background
    # flushes) are judged here too, so nothing falls between two tests.
    yield
    found = tenant_audit.take()
    if found:
        listing = "\n".join(f"  {v}" for v in found[:20])
        pytest.fail(
            f"{len(found)} library statement(s) touch a tenant table without a user_id "
            "filter (add the filter, or mark a genuinely cross-tenant operation with "
            "memstore.db.crosstenant.cross_tenant):\n" + listing,
            pytrace=False,
        )


# Under pytest-xdist (.ci/run) each worker audits its own tests; what it saw reaches the
# controller in ``workeroutput`` (merged by pytest_testnodedown), which reports and fails
# the run: xdist ignores a worker's own exit status.
_LATE: list[str] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Statements after the last test's teardown (session fixtures' finalisers).
    late = [*_LATE, *(str(v) for v in _AUDIT.take())]
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["tenant_audit"] = {
            "statements": _AUDIT.statements,
            "seconds": _AUDIT.seconds,
            "allowed": dict(_AUDIT.allowed),
            "test_own": _AUDIT.test_own,
            "late": late,
        }
        return
    if late:
        for violation in late:
            print(f"tenant audit, after the last test: {violation}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    seen = getattr(node, "workeroutput", {}).get("tenant_audit")
    if seen is None:
        return
    _AUDIT.statements += seen["statements"]
    _AUDIT.seconds += seen["seconds"]
    _AUDIT.allowed.update(seen["allowed"])
    _AUDIT.test_own += seen["test_own"]
    _LATE.extend(seen["late"])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if CITUS_ENABLED:
        terminalreporter.write_line("citus stage: on (the citus backend runs on a private cluster)")
    else:
        why = citus_unavailable()
        terminalreporter.write_line(
            "citus stage: off (set MEMSTORE_TEST_CITUS=1 to run it"
            + (f"; it could not run here: {why})" if why else ")")
        )
    if not _AUDIT.statements:
        return
    allowed = ", ".join(f"{k} {v}" for k, v in sorted(_AUDIT.allowed.items())) or "none"
    terminalreporter.write_line(
        f"tenant audit: {_AUDIT.statements} statements judged in {_AUDIT.seconds:.2f} s; "
        f"cross-tenant by name: "
        f"{allowed}; issued by test code itself: {_AUDIT.test_own}"
    )


class PostgresCluster:
    """A running server on which tests create throw-away databases."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url

    def url_for(self, database: str) -> str:
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def create_database(self, prefix: str = "t") -> str:
        name = f"{prefix}_{os.getpid()}_{next(_db_counter)}"

        async def create() -> None:
            engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
            try:
                async with engine.connect() as conn:
                    await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
                    await conn.execute(text(f'CREATE DATABASE "{name}"'))
            finally:
                await engine.dispose()

        asyncio.run(create())
        return self.url_for(name)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # pytest's default temp root (/tmp/pytest-of-USER) is shared by every run of
    # the user and pruned by them: another run could delete a database file or a
    # server's data directory under this one. A private root unless --basetemp.
    if config.option.basetemp is None:
        private = tempfile.mkdtemp(prefix="memstore-pytest-")
        config.option.basetemp = private
        config.stash[_PRIVATE_BASETEMP] = private


def pytest_unconfigure(config: pytest.Config) -> None:
    private = config.stash.get(_PRIVATE_BASETEMP, None)
    if private is not None:
        shutil.rmtree(private, ignore_errors=True)


_PRIVATE_BASETEMP = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    external = os.environ.get("MEMSTORE_TEST_PG_URL")
    if external:
        yield PostgresCluster(external)
        return
    # Own directory, stopped and checked in teardown (tests/pg_servers.py).
    with private_pgserver("memstore-pg-cluster-") as (server, _pids):
        url = make_url(server.get_uri()).set(drivername="postgresql+asyncpg")
        yield PostgresCluster(url.render_as_string(hide_password=False))


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[CitusCluster]:
    """A private coordinator + two workers for the session, stopped and checked in teardown."""
    reason = citus_unavailable()
    if reason is not None:
        pytest.fail(f"MEMSTORE_TEST_CITUS=1 but no Citus cluster can run: {reason}")
    with private_citus_cluster() as cluster:
        yield cluster


def citus_database(cluster: CitusCluster, prefix: str) -> str:
    """A fresh database on every node of ``cluster`` (citus + vector, workers registered)."""
    return cluster.create_database(f"{prefix}_{os.getpid()}_{next(_db_counter)}")


async def migrate_and_distribute(url: str) -> None:
    """What an operator runs on a new cluster: `memstore migrate`, `memstore citus --apply`."""
    await upgrade(url)
    await apply_citus(url)


@pytest.fixture(scope="session")
def migrated_urls(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, str]:
    """One migrated database per backend, created lazily and shared by the session."""
    return {}


def _migrated_url(
    backend: str, cache: dict[str, str], request: pytest.FixtureRequest, tmp_dir: Path
) -> str:
    if backend not in cache:
        if backend == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp_dir / 'shared.db'}"
            asyncio.run(upgrade(url))
        elif backend == "citus":
            # One distributed database for the session, wiped per test like Postgres's.
            url = citus_database(request.getfixturevalue("citus_cluster"), "shared")
            asyncio.run(migrate_and_distribute(url))
        else:
            url = request.getfixturevalue("pg_cluster").create_database("shared")
            asyncio.run(upgrade(url))
        cache[backend] = url
    return cache[backend]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(
    backend: str,
    migrated_urls: dict[str, str],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    """URL of a migrated database of ``backend`` whose tenant tables are empty."""
    url = _migrated_url(backend, migrated_urls, request, tmp_path_factory.getbasetemp())
    asyncio.run(_wipe(url, truncate=backend == "postgres"))
    return url


@pytest.fixture
def empty_db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of a brand-new database with no schema at all."""
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    if backend == "citus":
        return citus_database(request.getfixturevalue("citus_cluster"), "empty")
    cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database("empty")


async def _wipe(url: str, *, truncate: bool | None = None) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            tables = tenant_tables()
            # Not on Citus: TRUNCATE locks and rewrites every shard of every table (0.6 s
            # with 4 shards, 3-6 s with the default 32), where a test leaves a few rows.
            if conn.dialect.name == "postgresql" and truncate is not False:
                names = ", ".join(f'"{t.name}"' for t in tables)
                await conn.execute(text(f"TRUNCATE {names}"))
            elif conn.dialect.name == "sqlite":
                for table in tables:
                    await conn.execute(table.delete())
            else:
                # Citus: each multi-shard DELETE fans out to every shard, and most tests write
                # to two or three of the tables: delete from those only, in one round
                # trip, on one connection per worker (nothing worth parallelising).
                probe = " UNION ALL ".join(
                    f"SELECT '{t.name}' WHERE EXISTS (SELECT 1 FROM \"{t.name}\")" for t in tables
                )
                written = (await conn.execute(text(probe))).scalars().all()
                if written:
                    await conn.execute(
                        text("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                    )
                    deletes = " ".join(f'DELETE FROM "{name}";' for name in written)
                    await conn.execute(text(f"DO $$ BEGIN {deletes} END $$"))
            # A wiped database holds no vectors: any embedder may claim it again.
            await conn.execute(ConfigRow.__table__.delete().where(ConfigRow.key == EMBEDDER_KEY))
    finally:
        await engine.dispose()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(db_url) as opened:
        yield opened


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine of the test's own on ``db_url`` (the store's database), for raw SQL."""
    async with own_engine(db_url) as opened:
        yield opened


@pytest.fixture
async def parts(db_url: str) -> AsyncIterator[StoreParts]:
    """A store on ``db_url`` built from parts the test holds (tests/store_parts.py)."""
    async with store_with_parts(db_url) as built:
        yield built


class ManualClock:
    """A clock tests move by hand (``MemoryStore(clock=...)``): TTLs need no sleeping."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


async def table_counts(url: str, user_id: str | None = None) -> dict[str, int]:
    """Rows per tenant table of the database at ``url`` (optionally of one stored tenant
    id), by scanning the tables on an engine of the test's own."""
    counts: dict[str, int] = {}
    async with own_engine(url) as engine, engine.connect() as conn:
        for table in tenant_tables():
            stmt: Any = table.select()
            if user_id is not None:
                stmt = stmt.where(table.c.user_id == user_id)
            counts[table.name] = len((await conn.execute(stmt)).all())
    return counts
