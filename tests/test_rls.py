"""Row-level security (Postgres, opt-in), seen from a non-owner application role."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from memstore import Episode, Fact, InvalidInput, MemoryStore, PermissionDenied
from memstore.backends.postgresql.citus import apply_citus
from memstore.db.engine import create_engine
from memstore.repositories.tenants import tenant_tables
from memstore.schema.migrate import upgrade
from memstore.schema.rls import rls_status
from tests.conftest import CITUS_ENABLED, citus_database, migrate_and_distribute, table_counts
from tests.store_parts import store_with_parts
from tests.test_export_import import comparable, populate

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[1]
APP_ROLE = f"memstore_app_{os.getpid()}"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def _admin(url: str, *statements: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


# On Citus too: policies and grants must reach the shards, and the transaction's
# tenant setting the workers that run each routed statement.
SERVERS = [
    "postgres",
    *([pytest.param("citus", marks=pytest.mark.citus)] if CITUS_ENABLED else []),
]


@pytest.fixture(params=SERVERS)
async def urls(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, str]]:
    """An owner URL and a URL for a separate role that owns nothing."""
    if request.param == "citus":
        cluster = request.getfixturevalue("citus_cluster")
        owner = await asyncio.to_thread(citus_database, cluster, "rls")
        await migrate_and_distribute(owner)
    else:
        pg_cluster: Any = request.getfixturevalue("pg_cluster")
        owner = await asyncio.to_thread(pg_cluster.create_database, "rls")
        await upgrade(owner)
    yield {"owner": owner, "app": await _with_app_role(owner)}


async def _with_app_role(owner: str) -> str:
    """The URL of ``owner``'s database for a role that may use its tables but owns nothing."""
    database = make_url(owner).database
    await _admin(
        owner,
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') "
        f"THEN CREATE ROLE {APP_ROLE} LOGIN; END IF; END $$",
        f'GRANT CONNECT ON DATABASE "{database}" TO {APP_ROLE}',
        f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {APP_ROLE}",
    )
    app = make_url(owner).set(username=APP_ROLE, password=None)
    return app.render_as_string(hide_password=False)


async def _name_tenant(conn: AsyncConnection, tenant: str) -> None:
    """Application SQL naming its transaction's tenant, as a client must on Citus too.

    Citus passes a setting on to the workers only as SET LOCAL with
    citus.propagate_set_commands = 'local' (on plain PostgreSQL that setting is
    an inert placeholder).
    """
    await conn.execute(text("SET LOCAL citus.propagate_set_commands TO 'local'"))
    await conn.execute(text(f"SET LOCAL memstore.user_id TO '{tenant}'"))


async def _tenants_seen(conn: AsyncConnection | AsyncSession) -> dict[str, set[str]]:
    """user_id values each tenant table shows to raw SQL without a user_id filter."""
    seen: dict[str, set[str]] = {}
    for table in tenant_tables():
        rows = await conn.execute(text(f'SELECT user_id FROM "{table.name}"'))
        seen[table.name] = {r[0] for r in rows}
    return seen


async def _visible(url: str, tenant: str | None) -> dict[str, set[str]]:
    """user_id values each tenant table shows to a raw connection as ``tenant``."""
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            if tenant is not None:
                await _name_tenant(conn, tenant)
            return await _tenants_seen(conn)
    finally:
        await engine.dispose()


async def test_policies_isolate_tenants_for_a_non_owner_role(urls: dict[str, str]) -> None:
    async with MemoryStore.open(urls["owner"]) as owner:
        await populate(owner, urls["owner"], "alice")
        await populate(owner, urls["owner"], "bob")
        alice_dump = await owner.export(user_id="alice")
        bob_counts = await table_counts(urls["owner"], "bob")

    # Before: the app role sees everybody (no policy yet) — the test can tell.
    assert all(v == {"alice", "bob"} for v in (await _visible(urls["app"], None)).values())

    done = await asyncio.to_thread(_cli, "rls", "enable", "--url", urls["owner"])
    assert done.returncode == 0, done.stderr
    assert all(s.enabled and s.has_policy and not s.forced for s in await rls_status(urls["owner"]))
    assert (await asyncio.to_thread(_cli, "rls", "status", "--url", urls["owner"])).returncode == 0

    # Without the setting: nothing. With bob's: exactly bob's rows.
    assert all(v == set() for v in (await _visible(urls["app"], None)).values())
    assert all(v == {"bob"} for v in (await _visible(urls["app"], "bob")).values())
    assert all(v == set() for v in (await _visible(urls["app"], "carol")).values())

    # A row for another tenant cannot be written under bob's setting.
    engine = create_engine(urls["app"])
    try:
        with pytest.raises(Exception, match="row-level security"):
            async with engine.begin() as conn:
                await _name_tenant(conn, "bob")
                await conn.execute(
                    text(
                        "INSERT INTO blocks (user_id, name, content, pinned_order, version,"
                        " updated_at) VALUES ('alice', 'evil', '', 9, 1, now())"
                    )
                )
    finally:
        await engine.dispose()

    # MemoryStore(rls=True) as the app role works normally for each tenant.
    async with store_with_parts(urls["app"], rls=True) as parts:
        app = parts.store
        assert comparable(await app.export(user_id="alice")) == comparable(alice_dump)
        await app.remember(Episode(user_id="alice", session_id="s", input="as app"))
        await app.add_fact(Fact(user_id="alice", subject="me", predicate="lives_in", object="Rome"))
        await app.update_block("persona", "new", user_id="alice")
        await app.remember_many(
            [
                Episode(user_id="alice", session_id="m", input="a"),
                Episode(user_id="bob", session_id="m", input="b"),
            ]
        )
        hits = await app.recall("as app", user_id="alice", limit=10)
        assert hits[0].input == "as app" and {e.user_id for e in hits} == {"alice"}
        assert {e.user_id for e in await app.recall("as app", user_id="bob")} == {"bob"}
        # The setting is transaction-local: the pooled connection forgets it.
        async with parts.engine.connect() as conn:
            assert await conn.scalar(text("SELECT count(*) FROM episodes")) == 0
        await app.forget(user_id="alice")
        await app.import_(alice_dump)

    # Without rls=True the app role sees nothing and may write nothing.
    async with MemoryStore.open(urls["app"]) as blind:
        assert await blind.recall("", user_id="bob") == []
        with pytest.raises(PermissionDenied):
            await blind.remember(Episode(user_id="bob", session_id="s", input="x"))

    async with MemoryStore.open(urls["owner"]) as owner:
        bob_now = await table_counts(urls["owner"], "bob")
        assert bob_now["episodes"] == bob_counts["episodes"] + 1  # only remember_many's
        # bob's recall above counted one access and his new session "m" got a turn
        # counter; nothing else of bob's changed.
        changed = {"episodes", "access_stats", "session_turns"}
        assert {k: v for k, v in bob_now.items() if k not in changed} == {
            k: v for k, v in bob_counts.items() if k not in changed
        }
        assert comparable(await owner.export(user_id="alice")) == comparable(alice_dump)

    done = await asyncio.to_thread(_cli, "rls", "disable", "--url", urls["owner"])
    assert done.returncode == 0, done.stderr
    assert all(v == {"alice", "bob"} for v in (await _visible(urls["app"], None)).values())
    assert (await asyncio.to_thread(_cli, "rls", "status", "--url", urls["owner"])).returncode == 2


async def test_rls_needs_postgres(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    await upgrade(url)
    with pytest.raises(InvalidInput):
        async with MemoryStore.open(url, rls=True):
            pass
    done = await asyncio.to_thread(_cli, "rls", "enable", "--url", url)
    assert done.returncode == 1 and "PostgreSQL" in done.stderr


async def _leak_session_setting(engine: Any, tenant: str) -> int:
    """Application SQL on a pooled connection: a *session-level* tenant setting, committed."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT set_config('memstore.user_id', :u, false)"), {"u": tenant})
        await conn.commit()
        return int(await conn.scalar(text("SELECT pg_backend_pid()")))


async def test_a_session_level_setting_does_not_survive_the_pool(urls: dict[str, str]) -> None:
    async with MemoryStore.open(urls["owner"]) as owner:
        await populate(owner, urls["owner"], "bob")
    done = await asyncio.to_thread(_cli, "rls", "enable", "--url", urls["owner"])
    assert done.returncode == 0, done.stderr

    # rls=True store: a transaction that names no tenant must see nothing.
    # Stores built on engines the test holds: it looks at their pooled connections.
    async with store_with_parts(urls["app"], rls=True) as parts:
        app = parts.store
        pid = await _leak_session_setting(parts.engine, "bob")
        async with parts.engine.connect() as conn:
            # Same pooled server connection, so the test would see a leak.
            assert await conn.scalar(text("SELECT pg_backend_pid()")) == pid
            assert await conn.scalar(text("SELECT count(*) FROM episodes")) == 0
            assert await conn.scalar(text("SELECT count(*) FROM facts")) == 0
        # The store's own calls still name their tenant and work.
        assert await app.recall("paris", user_id="bob")

    # A store without rls=True names no tenant at all: it must stay blind.
    async with store_with_parts(urls["app"]) as parts:
        blind = parts.store
        pid = await _leak_session_setting(parts.engine, "bob")
        assert await blind.recall("", user_id="bob") == []
        assert (await blind.profile(user_id="bob")).episode_count == 0
        async with parts.engine.connect() as conn:
            assert await conn.scalar(text("SELECT pg_backend_pid()")) == pid
            assert (
                await conn.scalar(
                    text("SELECT coalesce(current_setting('memstore.user_id', true), '')")
                )
                == ""
            )


async def test_fact_reads_of_one_statement_name_their_tenant(urls: dict[str, str]) -> None:
    """store.facts / fact_history skip the transaction only where no tenant setting is due."""
    async with MemoryStore.open(urls["owner"]) as owner:
        await populate(owner, urls["owner"], "alice")
        await populate(owner, urls["owner"], "bob")
        expected = await owner.fact_history(user_id="alice")
    done = await asyncio.to_thread(_cli, "rls", "enable", "--url", urls["owner"])
    assert done.returncode == 0, done.stderr

    async with MemoryStore.open(urls["app"], rls=True) as app:
        assert expected and await app.fact_history(user_id="alice") == expected
        current = await app.facts(user_id="alice", subject="me")
        assert current and {f.user_id for f in current} == {"alice"}
    async with MemoryStore.open(urls["app"]) as blind:
        assert await blind.fact_history(user_id="alice") == []
        assert await blind.facts(user_id="alice") == []


# A tenant id that is awkward as an SQL string constant (quote, backslash, bind markers).
AWKWARD = "o'brien\\' :u $1 %s"


async def test_raw_sql_in_a_bound_transaction_sees_only_the_named_tenant(
    urls: dict[str, str],
) -> None:
    """Application SQL without a user_id filter, in the transaction memstore named a tenant in."""
    async with MemoryStore.open(urls["owner"]) as owner:
        for user in ("alice", "bob", AWKWARD):
            await populate(owner, urls["owner"], user)
    done = await asyncio.to_thread(_cli, "rls", "enable", "--url", urls["owner"])
    assert done.returncode == 0, done.stderr

    engine = create_engine(urls["app"])
    try:
        async with (
            MemoryStore.open(urls["app"], rls=True) as app,
            AsyncSession(engine) as session,
            session.begin(),
        ):
            view = app.bind(session)
            assert await view.recall("paris", user_id="bob")
            seen = await _tenants_seen(session)
            assert seen["episodes"] == {"bob"} and all(v <= {"bob"} for v in seen.values())
            # The same transaction switched to another tenant: only that one's rows.
            assert {f.user_id for f in await view.facts(user_id=AWKWARD)} == {AWKWARD}
            seen = await _tenants_seen(session)
            assert seen["facts"] == {AWKWARD} and all(v <= {AWKWARD} for v in seen.values())
            await view.remember(Episode(user_id=AWKWARD, session_id="s", input="bound"))
            hits = await view.recall("bound", user_id=AWKWARD)
            assert hits[0].input == "bound" and {e.user_id for e in hits} == {AWKWARD}
    finally:
        await engine.dispose()
    async with MemoryStore.open(urls["owner"]) as owner:
        hits = await owner.recall("bound", user_id=AWKWARD)
        assert hits[0].input == "bound" and {e.user_id for e in hits} == {AWKWARD}


@pytest.mark.citus
@pytest.mark.skipif(not CITUS_ENABLED, reason="needs the Citus stage (MEMSTORE_TEST_CITUS=1)")
async def test_policies_made_before_distribution_reach_the_shards(citus_cluster: Any) -> None:
    """`memstore rls enable` before `memstore citus --apply`: the shards get the policies."""
    owner = await asyncio.to_thread(citus_database, citus_cluster, "rls_first")
    await upgrade(owner)
    async with MemoryStore.open(owner) as store:
        await populate(store, owner, "alice")
        await populate(store, owner, "bob")
    done = await asyncio.to_thread(_cli, "rls", "enable", "--url", owner)
    assert done.returncode == 0, done.stderr
    await apply_citus(owner)
    app = await _with_app_role(owner)

    assert all(v == set() for v in (await _visible(app, None)).values())
    assert all(v == {"bob"} for v in (await _visible(app, "bob")).values())
    async with MemoryStore.open(app, rls=True) as store:
        hits = await store.recall("paris", user_id="alice")
        assert hits and {e.user_id for e in hits} == {"alice"}
