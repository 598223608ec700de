"""Routing on a real Citus cluster: every single-tenant public call goes to one shard.

Every statement the library issues during a public call is captured (SQLAlchemy's
``before_cursor_execute`` on the store's engine and memstore's hot-path observers,
with its bound values) and EXPLAINed
on the coordinator with the same values. A statement that touches a tenant table
must have a *router* plan: one Citus Adaptive scan with ``Task Count: 1``, no
distributed subplans, no ``INSERT … SELECT`` through the coordinator. The
cross-tenant operations (gc of every tenant, consolidation scheduling, the
inspector's tenant list) are the registered exceptions; their task counts are
measured and must be the fan-out they are documented as (every shard), not more.

Only with the citus backend (``MEMSTORE_TEST_CITUS=1``; tests/conftest.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from memstore import Episode, Fact, MemoryStore
from memstore.backends.postgresql.append import APPEND_SQL
from memstore.db.engine import create_engine
from tests.citus_cluster import SHARD_COUNT
from tests.conftest import CITUS_ENABLED
from tests.sent_sql import every_statement
from tests.store_parts import own_engine
from tests.tenant_audit import tenant_table_names

# The LangGraph store's statements are routed too: this module needs memstore[langgraph].
pytest.importorskip("langgraph", reason="needs memstore[langgraph]")
from memstore.integrations.langgraph import MemstoreStore

pytestmark = [
    pytest.mark.citus,
    pytest.mark.skipif(not CITUS_ENABLED, reason="the Citus stage is off (MEMSTORE_TEST_CITUS=1)"),
]

CITUS_ONLY = [pytest.param("citus", marks=pytest.mark.citus)]
_TENANT_TABLE = re.compile(
    r"\b(" + "|".join(sorted(tenant_table_names(), key=len, reverse=True)) + r")\b", re.I
)
_DML = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.I)


@dataclass
class Captured:
    """Statements issued per labelled public call."""

    label: str = ""
    statements: list[tuple[str, str, Any]] = field(default_factory=list)

    def record(self, sql: str, params: Any) -> None:
        if _DML.match(sql) and _TENANT_TABLE.search(sql):
            self.statements.append((self.label, sql, params))


@dataclass(frozen=True)
class Plan:
    label: str
    sql: str
    scans: list[str]  # Citus custom scan providers in the plan
    tasks: list[int]  # Task Count of each distributed job
    subplans: int  # distributed subplans (results shipped through the coordinator)

    @property
    def router(self) -> bool:
        return self.scans == ["Citus Adaptive"] and self.tasks == [1] and self.subplans == 0

    def __str__(self) -> str:
        sql = " ".join(self.sql.split())[:300]
        return (
            f"{self.label}: scans={self.scans} tasks={self.tasks} subplans={self.subplans}: {sql}"
        )


def _walk(node: Any, plan: dict[str, Any]) -> None:
    if isinstance(node, dict):
        provider = node.get("Custom Plan Provider")
        if isinstance(provider, str) and provider.startswith("Citus"):
            plan["scans"].append(provider)
        query = node.get("Distributed Query")
        if isinstance(query, dict):
            plan["subplans"] += len(query.get("Subplans", []) or [])
            job = query.get("Job")
            if isinstance(job, dict) and "Task Count" in job:
                plan["tasks"].append(int(job["Task Count"]))
        for key, value in node.items():
            if key != "Remote Plan":  # the shard's own plan: not Citus's
                _walk(value, plan)
    elif isinstance(node, list):
        for item in node:
            _walk(item, plan)


async def explain(url: str, captured: list[tuple[str, str, Any]]) -> list[Plan]:
    """EXPLAIN each captured statement on the coordinator with its own bound values."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    plans: list[Plan] = []
    try:
        async with engine.connect() as conn:
            for label, sql, params in captured:
                found: dict[str, Any] = {"scans": [], "tasks": [], "subplans": 0}
                try:
                    raw = await conn.exec_driver_sql(
                        "EXPLAIN (FORMAT JSON) " + sql, tuple(params) if params else ()
                    )
                except DBAPIError as exc:  # a statement the cluster cannot even plan
                    found["scans"].append(f"error: {str(exc.orig).splitlines()[0]}")
                else:
                    value = raw.scalar_one()
                    _walk(json.loads(value) if isinstance(value, str) else value, found)
                plans.append(Plan(label, sql, found["scans"], found["tasks"], found["subplans"]))
    finally:
        await engine.dispose()
    return plans


Call = Callable[[MemoryStore], Awaitable[object]]


def _ep(user: str, session: str, text_: str, at: datetime) -> Episode:
    return Episode(user_id=user, session_id=session, input=text_, output="ok", occurred_at=at)


async def _seed(store: MemoryStore, user: str) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    await store.remember_many(
        [
            _ep(user, f"s{i % 3}", f"{user} likes topic {i} tea", base + timedelta(minutes=i))
            for i in range(30)
        ]
    )
    await store.add_fact(Fact(user_id=user, subject=user, predicate="likes", object="tea"))
    await store.update_block("persona", f"{user} persona", user_id=user)
    await store.threads.append("t1", {"q": "hi"}, from_id="user", to_id="agent", user_id=user)
    await store.working_memory(session_id="s0", user_id=user).set("plan", {"a": 1})


def single_tenant_calls() -> list[tuple[str, Call]]:
    """Every public single-tenant operation, as "alice", in an order that works."""
    at = datetime(2026, 2, 1, tzinfo=UTC)
    u = "alice"
    wm = lambda s: s.working_memory(session_id="s0", user_id=u)  # noqa: E731
    facts: dict[str, str] = {}

    async def add_fact(s: MemoryStore) -> None:
        facts["id"] = await s.add_fact(Fact(user_id=u, subject=u, predicate="city", object="Oslo"))

    async def recall_and_flush(s: MemoryStore) -> None:
        # The counts recall buffers, written by an explicit flush (a background flush
        # may take some first: it runs under this label too).
        await s.recall("topic", user_id=u)
        await s.flush_access()

    async def lg(s: MemoryStore) -> None:
        store = MemstoreStore(s, user_id=u)
        await store.aput(("notes",), "k1", {"text": "hello"})
        await store.aget(("notes",), "k1")
        await store.asearch(("notes",), limit=5)
        await store.adelete(("notes",), "k1")

    async def export_import(s: MemoryStore) -> None:
        dump = await s.export(user_id=u)
        await s.forget(user_id="carol")
        await s.import_(dump, user_id="carol")

    return [
        ("remember", lambda s: s.remember(_ep(u, "s9", "one more turn about tea", at))),
        (
            "remember_many",
            lambda s: s.remember_many([_ep(u, f"m{i}", f"batch {i}", at) for i in range(3)]),
        ),
        ("recall", lambda s: s.recall("tea", user_id=u)),
        ("recall_scored", lambda s: s.recall_scored("topic tea", user_id=u, limit=3)),
        ("session_messages", lambda s: s.session_messages("s1", user_id=u)),
        ("context", lambda s: s.context(user_id=u, query="what does alice like?")),
        ("prefetch", lambda s: s.prefetch(user_id=u)),
        ("recall+flush_access", recall_and_flush),
        ("access_stats", lambda s: s.access_stats(user_id=u)),
        ("add_fact", add_fact),
        (
            "assert_fact",
            lambda s: s.assert_fact(Fact(user_id=u, subject=u, predicate="city", object="Bergen")),
        ),
        ("facts", lambda s: s.facts(user_id=u)),
        ("recall_facts", lambda s: s.recall_facts("city", user_id=u)),
        ("fact_history", lambda s: s.fact_history(user_id=u, subject=u, predicate="city")),
        ("retract_fact", lambda s: s.retract_fact(facts["id"], user_id=u)),
        ("update_block", lambda s: s.update_block("goals", "ship it", user_id=u)),
        ("append_block", lambda s: s.append_block("goals", " today", user_id=u)),
        ("working", lambda s: s.working(user_id=u)),
        ("block_history", lambda s: s.block_history("goals", user_id=u)),
        ("delete_block", lambda s: s.delete_block("goals", user_id=u)),
        (
            "threads.append",
            lambda s: s.threads.append("t2", "x", from_id="a", to_id="b", user_id=u),
        ),
        ("threads.get_thread", lambda s: s.threads.get_thread("t2", user_id=u)),
        ("threads.get_slice", lambda s: s.threads.get_slice("t2", -1, user_id=u)),
        ("threads.list_threads", lambda s: s.threads.list_threads(user_id=u)),
        ("threads.stats", lambda s: s.threads.stats(user_id=u)),
        ("threads.delete_thread", lambda s: s.threads.delete_thread("t2", user_id=u)),
        ("wm.set", lambda s: wm(s).set("k", [1, 2], ttl_seconds=60)),
        ("wm.get", lambda s: wm(s).get("k")),
        ("wm.list_keys", lambda s: wm(s).list_keys()),
        ("wm.append_scratchpad", lambda s: wm(s).append_scratchpad("note")),
        ("wm.create_checkpoint", lambda s: wm(s).create_checkpoint("cp")),
        ("wm.clear", lambda s: wm(s).clear()),
        ("gc(user_id)", lambda s: s.gc(user_id=u)),
        ("consolidate(user_id)", lambda s: s.consolidate(user_id=u)),
        ("profile", lambda s: s.profile(user_id=u)),
        ("snapshot", lambda s: s.snapshot(user_id=u)),
        ("langgraph", lg),
        ("export+import_", export_import),
        ("forget(session)", lambda s: s.forget(user_id=u, session_id="s2")),
        (
            "forget(before)",
            lambda s: s.forget(user_id=u, before=datetime(2026, 1, 1, 0, 5, tzinfo=UTC)),
        ),
        ("forget(user)", lambda s: s.forget(user_id=u)),
    ]


CROSS_TENANT_CALLS: list[tuple[str, Call]] = [
    ("gc_all_tenants()", lambda s: s.gc_all_tenants()),
    ("consolidate_all_tenants()", lambda s: s.consolidate_all_tenants()),
    ("list_tenants_cross_tenant", lambda s: s.list_tenants_cross_tenant()),
]


async def _run(store: MemoryStore, calls: list[tuple[str, Call]]) -> Captured:
    captured = Captured()
    # Every engine of the process: the store's is the only one open meanwhile.
    with every_statement(captured.record):
        for label, call in calls:
            captured.label = label
            await call(store)
    return captured


@pytest.mark.parametrize("backend", CITUS_ONLY)
async def test_every_single_tenant_call_is_routed_to_one_shard(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        for user in ("alice", "bob", "carol", "dave"):
            await _seed(store, user)
        calls = single_tenant_calls()
        captured = await _run(store, calls)
    plans = await explain(db_url, captured.statements)
    covered = {p.label for p in plans}
    # Every call issued tenant statements, and every one of them was EXPLAINed.
    assert covered == {label for label, _ in calls}, {label for label, _ in calls} - covered
    fanned = [str(p) for p in plans if not p.router]
    assert not fanned, "not routed to one shard:\n" + "\n".join(fanned)
    print(f"\n{len(plans)} statements of {len(calls)} single-tenant calls: all router plans")


@pytest.mark.parametrize("backend", CITUS_ONLY)
async def test_cross_tenant_calls_fan_out_as_documented(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        for user in ("alice", "bob"):
            await _seed(store, user)
        captured = await _run(store, CROSS_TENANT_CALLS)
    plans = await explain(db_url, captured.statements)
    by_label: dict[str, list[Plan]] = {}
    for plan in plans:
        by_label.setdefault(plan.label, []).append(plan)
    assert set(by_label) == {label for label, _ in CROSS_TENANT_CALLS}
    report = []
    for label, found in by_label.items():
        fan_out = [p for p in found if not p.router]
        # The listing read fans out (that is why it is registered); never more tasks
        # than shards per job, and the per-tenant work after it is routed.
        assert fan_out, f"{label}: expected its cross-tenant read to fan out"
        assert all(t <= SHARD_COUNT for p in fan_out for t in p.tasks), [str(p) for p in fan_out]
        report.append(
            f"{label}: {len(found)} statements, {len(fan_out)} multi-shard "
            f"(tasks {[p.tasks for p in fan_out]}, subplans {[p.subplans for p in fan_out]})"
        )
    print("\n" + "\n".join(report))


@pytest.mark.parametrize("backend", CITUS_ONLY)
async def test_multi_tenant_turn_batch_stays_correct(db_url: str) -> None:
    """A batch of several tenants takes the coordinator-planned upsert; turns stay dense."""
    at = datetime(2026, 3, 1, tzinfo=UTC)
    async with MemoryStore.open(db_url) as store:
        for round_ in range(3):
            await store.remember_many(
                [_ep(f"u{k % 4}", f"s{k % 2}", f"r{round_} k{k}", at) for k in range(8)]
            )
    async with own_engine(db_url) as engine, engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT user_id, session_id, array_agg(turn ORDER BY turn) "
                    "FROM episodes WHERE user_id = ANY(:u) GROUP BY 1, 2 ORDER BY 1, 2"
                ),
                {"u": [f"u{k}" for k in range(4)]},
            )
        ).all()
    assert [(r[0], r[1], list(r[2])) for r in rows] == [
        (f"u{k}", f"s{k % 2}", [0, 1, 2, 3, 4, 5]) for k in range(4)
    ]


@pytest.mark.parametrize("backend", CITUS_ONLY)
async def test_the_one_statement_append_is_left_to_single_nodes(db_url: str) -> None:
    """Citus runs a data-modifying CTE as subplans through the coordinator, never as one
    router task: so on Citus ``threads.append`` sends its routed statements instead of
    the single-node statement (the routing test above sees those)."""
    engine = create_engine(db_url, isolation_level="AUTOCOMMIT")
    found: dict[str, Any] = {"scans": [], "tasks": [], "subplans": 0}
    values = {
        "user_id": "alice",
        "thread_id": "t",
        "now": datetime(2026, 1, 1, tzinfo=UTC),
        "max_slots": 10,
        "from_id": "a",
        "to_id": "b",
        "payload_type": "str",
        "payload": '"x"',
        "own_name": None,
        "is_self_call": False,
        "usage_instructions": "",
        "todo_nudge": "",
        "epoch": "e",
        "channel": "memstore_changes",
    }
    try:
        async with engine.connect() as conn:
            raw = await conn.execute(text("EXPLAIN (FORMAT JSON) " + APPEND_SQL), values)
            value = raw.scalar_one()
            _walk(json.loads(value) if isinstance(value, str) else value, found)
    finally:
        await engine.dispose()
    plan = Plan("append CTE", APPEND_SQL, found["scans"], found["tasks"], found["subplans"])
    assert not plan.router and plan.subplans > 0, str(plan)
    async with MemoryStore.open(db_url) as store:
        captured = await _run(
            store,
            [
                (
                    "threads.append",
                    lambda s: s.threads.append("c", 1, from_id="a", to_id="b", user_id="alice"),
                )
            ],
        )
    sent = [sql for _, sql, _ in captured.statements]
    assert sent
    assert not [sql for sql in sent if "INSERT INTO slots" in sql and "change_heads" in sql]
