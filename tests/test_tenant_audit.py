"""The statement-level tenant audit: its SQL analysis, and the hook on real library calls.

The audit itself runs on every test (tests/conftest.py); these tests show what it
accepts and what it catches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Episode, MemoryStore
from memstore.db.crosstenant import (
    CROSS_TENANT_OPERATIONS,
    cross_tenant,
    cross_tenant_operation,
)
from memstore.schema.migrate import upgrade
from memstore.schema.rls import disable_rls, enable_rls
from tests.tenant_audit import TenantAudit, find_violations

TENANT = frozenset(
    {"episodes", "facts", "blocks", "block_versions", "episode_consolidation", "threads", "slots"}
)


def problems(sql: str, dialect: str = "postgresql") -> tuple[str, ...]:
    return find_violations(sql, dialect, TENANT)


SAFE = [
    # plain equality, IN, ANY, Postgres casts, SQLite placeholders
    "SELECT id FROM episodes WHERE episodes.user_id = $1::VARCHAR",
    "SELECT id FROM episodes WHERE user_id IN ($1::VARCHAR, $2::VARCHAR) AND id = $3",
    "SELECT id FROM episodes WHERE user_id = ANY($1)",
    "SELECT count(*) FROM episodes WHERE 'x' = episodes.session_id AND episodes.user_id = 'a'",
    # aliases and joins: the filter reaches the other table through the join condition
    "SELECT e.id FROM episodes AS e JOIN episode_consolidation AS c "
    "ON c.user_id = e.user_id AND c.episode_id = e.id WHERE e.user_id = $1",
    "SELECT b.name FROM blocks b LEFT OUTER JOIN block_versions v "
    "ON v.user_id = b.user_id AND v.name = b.name WHERE b.user_id = $1",
    # tuple IN (remember_many's turn lookup), in both renderings
    "SELECT user_id, max(turn) FROM episodes WHERE (episodes.user_id, episodes.session_id) "
    "IN (($1::VARCHAR, $2::VARCHAR), ($3::VARCHAR, $4::VARCHAR)) GROUP BY user_id",
    "SELECT user_id FROM episodes WHERE (user_id, session_id) IN (VALUES (?, ?), (?, ?))",
    # correlated subqueries see the outer filter
    "SELECT id FROM episodes WHERE episodes.user_id = ? AND NOT (EXISTS (SELECT * FROM "
    "episode_consolidation WHERE episode_consolidation.user_id = episodes.user_id "
    "AND episode_consolidation.episode_id = episodes.id))",
    "SELECT id, (SELECT count(*) FROM facts f WHERE f.user_id = e.user_id) FROM episodes e "
    "WHERE e.user_id = ?",
    # CTEs and derived tables: the outer filter is pushed into a plain projection
    "WITH mine AS (SELECT * FROM facts WHERE user_id = $1) SELECT * FROM mine WHERE x = 1",
    "WITH t AS (SELECT user_id, id FROM facts) SELECT id FROM t WHERE t.user_id = $1",
    "SELECT s.id FROM (SELECT user_id, id FROM episodes) AS s WHERE s.user_id = $1",
    "SELECT 1 UNION ALL SELECT 2 FROM facts WHERE user_id = $1",
    # a VALUES list of bound rows filters like IN: the access-count flush's shape
    "WITH buffered(user_id, item_id) AS (VALUES (?, ?), (?, ?)) INSERT INTO access_stats "
    "(user_id, item_id) SELECT buffered.user_id, buffered.item_id FROM buffered WHERE "
    "(EXISTS (SELECT * FROM episodes WHERE episodes.user_id = buffered.user_id "
    "AND episodes.id = buffered.item_id)) OR (EXISTS (SELECT * FROM facts "
    "WHERE facts.user_id = buffered.user_id))",
    # writes
    "INSERT INTO episodes (user_id, id, input) VALUES ($1, $2, $3), ($4, $5, $6)",
    "INSERT INTO threads (user_id, thread_id, next_slot_index) VALUES (?, ?, ?) "
    "ON CONFLICT (user_id, thread_id) DO UPDATE SET next_slot_index = "
    "threads.next_slot_index + 1 RETURNING next_slot_index",
    "INSERT INTO facts (user_id, id) SELECT user_id, id FROM facts WHERE user_id = $1",
    "UPDATE facts SET superseded_at = $1 WHERE facts.user_id = $2 AND facts.id = $3",
    "DELETE FROM slots WHERE slots.user_id = $1 AND slots.thread_id IN ($2, $3)",
    "DELETE FROM slots USING threads WHERE slots.user_id = threads.user_id "
    "AND slots.thread_id = threads.thread_id AND threads.user_id = $1",
    # statements on no tenant table
    "SELECT pg_try_advisory_xact_lock($1, $2)",
    "SELECT value FROM memstore_config WHERE key = $1",
    "SELECT create_distributed_table('episodes', 'user_id')",
    "PRAGMA foreign_keys = ON",
]

UNSAFE = [
    ("SELECT count(*) FROM episodes", "episodes: no filter"),
    ("SELECT id FROM episodes WHERE user_id = $1 OR id = $2", "episodes: no filter"),
    ("SELECT id FROM episodes WHERE user_id <> $1", "episodes: no filter"),
    ("SELECT id FROM episodes WHERE user_id IN (SELECT user_id FROM facts)", "episodes: no filter"),
    (
        "SELECT e.id FROM episodes e JOIN facts f ON f.id = e.id WHERE e.user_id = $1",
        "facts AS f: no filter",
    ),
    (
        "SELECT b.name FROM blocks b LEFT JOIN block_versions v ON v.user_id = b.user_id "
        "WHERE v.user_id = $1",
        "blocks AS b: no filter",
    ),
    (
        "WITH t AS (SELECT user_id, id FROM facts LIMIT 10) SELECT id FROM t WHERE t.user_id = $1",
        "facts: no filter",
    ),
    # the over-fetch shape: global nearest rows, tenant filter outside the LIMIT
    (
        "SELECT anon_1.id FROM (SELECT episodes.id, episodes.user_id FROM episodes "
        "ORDER BY episodes.embedding <=> $1 LIMIT $2) AS anon_1 WHERE anon_1.user_id = $3",
        "episodes: no filter",
    ),
    (
        "SELECT s.id FROM (SELECT user_id, count(*) AS id FROM episodes GROUP BY user_id) s "
        "WHERE s.user_id = $1",
        "episodes: no filter",
    ),
    (
        "SELECT id FROM episodes WHERE user_id = $1 AND EXISTS (SELECT 1 FROM facts "
        "WHERE facts.id = episodes.id)",
        "facts: no filter",
    ),
    (
        "WITH b(user_id) AS (SELECT user_id FROM threads) SELECT 1 FROM b "
        "WHERE EXISTS (SELECT 1 FROM episodes WHERE episodes.user_id = b.user_id)",
        "threads: no filter",
    ),
    (
        "WITH b(user_id) AS (VALUES (?), (lower(x))) SELECT 1 FROM b "
        "WHERE EXISTS (SELECT 1 FROM episodes WHERE episodes.user_id = b.user_id)",
        "episodes: no filter",
    ),
    ("INSERT INTO episodes (id, input) VALUES ($1, $2)", "INSERT without a user_id"),
    ("INSERT INTO facts (user_id, id) SELECT user_id, id FROM facts", "facts: no filter"),
    ("UPDATE facts SET superseded_at = $1 WHERE facts.id = $2", "facts: no filter"),
    (
        "DELETE FROM slots USING threads WHERE slots.thread_id = threads.thread_id "
        "AND threads.user_id = $1",
        "slots: no filter",
    ),
    ("DELETE FROM working_memory_x WHERE 1 = 1; DELETE FROM episodes", "episodes: no filter"),
    ("TRUNCATE episodes", "DDL on a tenant table"),
    ("ALTER TABLE facts ENABLE ROW LEVEL SECURITY", "DDL on a tenant table"),
]


@pytest.mark.parametrize("sql", SAFE)
def test_statements_filtered_by_tenant_pass(sql: str) -> None:
    dialect = "sqlite" if "?" in sql or "PRAGMA" in sql else "postgresql"
    assert problems(sql, dialect) == ()


@pytest.mark.parametrize(("sql", "expected"), UNSAFE)
def test_statements_without_tenant_filter_are_caught(sql: str, expected: str) -> None:
    found = problems(sql)
    assert any(expected in p for p in found), found


# Tenant-filtered, yet a Citus cluster cannot route them to one shard (PostgreSQL only).
UNROUTABLE = [
    # a block created with its pinned order from a subquery: Citus refuses it outright
    (
        "INSERT INTO blocks (user_id, name, content, pinned_order, version, updated_at) "
        "VALUES ($1::VARCHAR, $2::VARCHAR, $3::VARCHAR, (SELECT coalesce(max("
        "blocks.pinned_order) + $4::INTEGER, $5::INTEGER) AS coalesce_1 FROM blocks WHERE "
        "blocks.user_id = $6::VARCHAR), $7::INTEGER, $8::TIMESTAMP WITH TIME ZONE)",
        "a subquery in INSERT … VALUES",
    ),
    # the turn reservation over unnest arrays (kept for batches of several tenants, marked)
    (
        "INSERT INTO session_turns (user_id, session_id, next_turn) SELECT t.u, t.s, t.n "
        "FROM unnest(CAST($1 AS text[]), CAST($2 AS text[]), CAST($3 AS int[])) "
        "WITH ORDINALITY AS t(u, s, n, i) ORDER BY t.i ON CONFLICT (user_id, session_id) "
        "DO UPDATE SET next_turn = session_turns.next_turn + excluded.next_turn",
        "INSERT … SELECT whose user_id is not a co-located tenant table's column",
    ),
    # an access-count flush from a correlated VALUES list
    (
        "WITH buffered(user_id, item_id) AS (VALUES ($1, $2), ($3, $4)) INSERT INTO "
        "access_stats (user_id, item_id) SELECT buffered.user_id, buffered.item_id FROM "
        "buffered WHERE EXISTS (SELECT * FROM episodes WHERE episodes.user_id = "
        "buffered.user_id AND episodes.id = buffered.item_id)",
        "INSERT … SELECT whose user_id is not a co-located tenant table's column",
    ),
    # a co-located source, but the tenant is a parameter rather than its column
    (
        "INSERT INTO session_turns (user_id, session_id, next_turn) SELECT $1, "
        "e.session_id, 1 FROM episodes e WHERE e.user_id = $1",
        "INSERT … SELECT whose user_id is not a co-located tenant table's column",
    ),
]

ROUTABLE_INSERTS = [
    "INSERT INTO session_turns (user_id, session_id, next_turn) VALUES ($1, $2, $3), "
    "($1, $4, $5) ON CONFLICT (user_id, session_id) DO UPDATE SET next_turn = "
    "session_turns.next_turn + excluded.next_turn RETURNING user_id, session_id, next_turn",
    "INSERT INTO session_turns (user_id, session_id, next_turn) SELECT episodes.user_id, "
    "episodes.session_id, max(episodes.turn) + $1 FROM episodes WHERE episodes.user_id = $2 "
    "GROUP BY episodes.user_id, episodes.session_id ON CONFLICT (user_id, session_id) "
    "DO UPDATE SET next_turn = greatest(session_turns.next_turn, excluded.next_turn)",
]


@pytest.mark.parametrize(("sql", "expected"), UNROUTABLE)
def test_statements_citus_cannot_route_are_caught(sql: str, expected: str) -> None:
    found = find_violations(sql, "postgresql")
    assert any(expected in p for p in found), found
    # SQLite never runs on Citus: there the same text is judged for its tenant filter only.
    if "unnest" not in sql:
        assert find_violations(sql.replace("$", ":p"), "sqlite") == ()


@pytest.mark.parametrize("sql", ROUTABLE_INSERTS)
def test_routable_inserts_pass(sql: str) -> None:
    assert find_violations(sql, "postgresql") == ()


def test_registry_names_must_be_registered() -> None:
    assert all(reason.strip() for reason in CROSS_TENANT_OPERATIONS.values())
    with pytest.raises(ValueError, match="not a registered cross-tenant operation"):
        cross_tenant_operation("list-every-tenant")
    with pytest.raises(ValueError):
        cross_tenant(text("SELECT 1"), "list-every-tenant")


@pytest.fixture
def strict_audit() -> Iterator[TenantAudit]:
    """A second audit on every engine that honours no cross-tenant operation at all."""
    audit = TenantAudit(allowed_operations=frozenset())
    event.listen(Engine, "before_cursor_execute", audit)
    try:
        yield audit
    finally:
        event.remove(Engine, "before_cursor_execute", audit)


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("sqlite", marks=pytest.mark.sqlite),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ],
)
async def test_hook_sees_library_statements_and_attributes_them(
    store: MemoryStore, strict_audit: TenantAudit, tenant_audit: TenantAudit
) -> None:
    """Real cross-tenant library calls: caught without their mark, allowed with it."""
    before = dict(tenant_audit.allowed)
    await store.remember(
        Episode(user_id="alice", session_id="s", input="I live in Paris", output="ok")
    )
    await store.consolidate_all_tenants()
    await store.gc_all_tenants()
    # The tenant-scoped calls produced no finding; the schedulers did, from the library.
    found = strict_audit.take()
    origins = {v.origin.rsplit(":", 1)[0] for v in found}
    assert origins == {
        "library:memstore/repositories/changes.py",
        "library:memstore/repositories/consolidation.py",
        "library:memstore/repositories/threads.py",
        "library:memstore/repositories/working_memory.py",
    }, found
    assert all("no filter on user_id" in " ".join(v.problems) for v in found)
    # The session audit allowed exactly those, by name.
    assert tenant_audit.allowed["consolidation-scheduling"] > before.get(
        "consolidation-scheduling", 0
    )
    assert tenant_audit.allowed["gc-all-tenants"] > before.get("gc-all-tenants", 0)


@pytest.mark.parametrize(
    "backend",
    [pytest.param("sqlite", marks=pytest.mark.sqlite)],
)
async def test_statements_of_test_code_are_not_the_librarys(
    engine: AsyncEngine, store: MemoryStore, strict_audit: TenantAudit
) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT count(*) FROM episodes"))
    assert strict_audit.take() == []
    assert strict_audit.test_own >= 1


@pytest.mark.postgres
async def test_rls_management_is_cross_tenant_by_name(
    pg_cluster: Any, strict_audit: TenantAudit, tenant_audit: TenantAudit
) -> None:
    url = await asyncio.to_thread(pg_cluster.create_database, "audit_rls")
    await upgrade(url)
    strict_audit.take()  # the migration's own DDL is not what this test is about
    before = tenant_audit.allowed["rls-management"]
    await enable_rls(url)
    await disable_rls(url)
    found = strict_audit.take()
    assert found
    assert {v.origin.rsplit(":", 1)[0] for v in found} == {"library:memstore/schema/rls.py"}
    assert all("DDL on a tenant table" in " ".join(v.problems) for v in found)
    assert tenant_audit.allowed["rls-management"] - before == len(found)
