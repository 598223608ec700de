"""``store.tenant("alice")``: every tenant-scoped method of the store, without ``user_id``,
bound to one tenant; generated from the store (scripts/gen_tenant.py), typed, with its
sync twin; the adapters (MCP, LangGraph, Agents session) resolve their tenant through it.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker

from memstore import (
    ANONYMOUS,
    Episode,
    Fact,
    InvalidInput,
    MemoryStore,
    SyncMemoryStore,
    TenantMemory,
    TenantRequired,
    TenantThreads,
    ThreadBuffer,
)
from memstore.sync import SyncTenantMemory, SyncTenantThreads
from tests.doc_blocks import code_blocks
from tests.store_parts import own_engine

REPO = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_tenant", REPO / "scripts/gen_tenant.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_tenant", module)
    spec.loader.exec_module(module)
    return module


def test_generated_handle_module_is_current() -> None:
    pytest.importorskip("ruff", reason="the generator sorts imports with ruff (the dev extra)")
    gen = _generator()
    expected = gen.render()
    committed = (REPO / gen.OUTPUT).read_text()
    if committed != expected:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True), expected.splitlines(keepends=True)
            )
        )
        pytest.fail(f"{gen.OUTPUT} is stale: run python scripts/gen_tenant.py\n{diff[:4000]}")


def _without_user_id(func: Any) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(func, eval_str=True).parameters.values())[1:]
    return [(p.name, p.annotation, p.default) for p in params if p.name != "user_id"]


@pytest.mark.parametrize(
    ("source", "handle"), [(MemoryStore, TenantMemory), (ThreadBuffer, TenantThreads)]
)
def test_the_handle_has_every_tenant_scoped_method_with_its_signature(
    source: type, handle: type
) -> None:
    gen = _generator()
    (spec,) = [c for c in gen.CLASSES if c.name == handle.__name__]
    missing, differ = [], []
    for name, member in inspect.getmembers(source):
        if name.startswith("_") or not callable(member) or not gen.tenant_scoped(member):
            continue
        if name in spec.store_wide:  # only tenant(user_id): it makes the handle
            assert name == "tenant"
            continue
        if not hasattr(handle, name):
            missing.append(name)
        elif _without_user_id(member) != _without_user_id(getattr(handle, name)):
            differ.append(name)
    assert missing == [] and differ == [], (missing, differ)
    for name in ("remember", "remember_many", "add_fact", "assert_fact"):
        if hasattr(source, name):
            assert _without_user_id(getattr(source, name)) == _without_user_id(
                getattr(handle, name)
            )


class NewStore:
    async def remember_everything(self, episodes: list[Episode]) -> int:
        """A tenant-scoped method whose tenant is in its argument, not yet classified."""
        return len(episodes)


def test_a_store_method_without_user_id_must_be_classified() -> None:
    """A new method taking no ``user_id`` cannot be left off the handle unnoticed."""
    gen = _generator()
    sync = gen.sync_generator()
    names = sync.Names()
    spec = gen.HandleClass("NewHandle", f"{__name__}:NewStore", "TenantBase", doc="New.")
    with pytest.raises(sync.GenerationError, match="remember_everything takes no user_id"):
        gen.render_class(spec, sync.Renderer(names, {}), sync, names)


async def test_the_handle_isolates_its_tenant(store: MemoryStore) -> None:
    alice, bob = store.tenant("alice"), store.tenant("bob")
    episode = await alice.remember(Episode(session_id="s1", input="I live in Paris"))
    fact = await alice.add_fact(Fact(subject="alice", predicate="lives_in", object="Paris"))
    await alice.update_block("persona", "brief")
    await alice.threads.append("t1", {"q": 1}, from_id="user", to_id="agent")
    await alice.working_memory(session_id="s1").set("k", 1)
    # What alice wrote is alice's, as the store reads it by name.
    assert (await store.get_episode(episode, user_id="alice")).user_id == "alice"
    assert [f.fact_id for f in await store.facts(user_id="alice")] == [fact]
    assert [e.id for e in await alice.recall("Paris")] == [episode]
    assert await alice.threads.length("t1") == 1
    assert await alice.working_memory(session_id="s1").get("k") == 1
    # bob's handle sees none of it.
    assert await bob.recall("Paris") == []
    assert await bob.facts() == []
    assert await bob.working() == []
    assert await bob.threads.list_threads() == []
    assert await bob.working_memory(session_id="s1").get("k") is None
    assert (await bob.profile()).episode_count == 0
    assert all(rows == [] for rows in (await bob.export())["tables"].values())
    assert await bob.forget() == 0
    assert (await alice.profile()).episode_count == 1
    assert alice.user_id == "alice" and alice.threads.user_id == "alice"


async def test_another_tenants_row_is_refused_and_nothing_is_written(store: MemoryStore) -> None:
    alice = store.tenant("alice")
    with pytest.raises(InvalidInput, match=r"store\.tenant\('bob'\)"):
        await alice.remember(Episode(session_id="s", user_id="bob", input="hi"))
    with pytest.raises(InvalidInput):
        await alice.remember_many(
            [
                Episode(session_id="s", input="mine"),
                Episode(session_id="s", user_id="bob", input="x"),
            ]
        )
    with pytest.raises(InvalidInput):
        await alice.assert_fact(Fact(user_id="bob", subject="b", predicate="likes", object="x"))
    assert await store.list_tenants_cross_tenant() == []
    # Its own user_id, spelt out, is fine.
    await alice.add_fact(Fact(user_id="alice", subject="a", predicate="likes", object="tea"))
    assert await store.list_tenants_cross_tenant() == ["alice"]


async def test_a_handle_names_a_valid_tenant(store: MemoryStore) -> None:
    with pytest.raises(TenantRequired):
        store.tenant(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="reserved"):
        store.tenant("__other__")
    anonymous = store.tenant(ANONYMOUS)
    await anonymous.remember(Episode(session_id="s", input="hi"))
    assert [e.user_id for e in await store.recall("hi", user_id=ANONYMOUS)] == [ANONYMOUS]


async def test_a_bound_views_handle_runs_in_the_callers_transaction(
    store: MemoryStore, db_url: str
) -> None:
    async with own_engine(db_url) as engine, async_sessionmaker(engine)() as session:
        await session.begin()
        await store.bind(session).tenant("alice").update_block("notes", "uncommitted")
        assert [b.name for b in await store.bind(session).tenant("alice").working()] == ["notes"]
        await session.rollback()
    assert await store.tenant("alice").working() == []


def test_the_sync_store_has_the_handle(db_url: str) -> None:
    with SyncMemoryStore.open(db_url) as store:
        alice = store.tenant("alice")
        assert isinstance(alice, SyncTenantMemory) and isinstance(alice.threads, SyncTenantThreads)
        episode = alice.remember(Episode(session_id="s", input="a sync turn"))
        assert [e.id for e in alice.recall("sync turn")] == [episode]
        alice.threads.append("t", {"n": 1}, from_id="a", to_id="b")
        assert [s.payload for s in alice.threads.iterate("t")] == [{"n": 1}]
        alice.working_memory(session_id="s").set("k", 2)
        assert store.working_memory(session_id="s", user_id="alice").get("k") == 2
        assert store.tenant("bob").recall("sync turn") == []
        with pytest.raises(TenantRequired):
            store.recall("sync turn")


async def test_the_tenants_page_example_runs(store: MemoryStore) -> None:
    (code,) = code_blocks("docs/concepts.md", heading="## Tenants")
    body = "".join(f"    {line}\n" for line in code.splitlines())
    namespace: dict[str, Any] = {"Episode": Episode}
    exec(compile(f"async def example(store):\n{body}", "docs/concepts.md", "exec"), namespace)
    await namespace["example"](store)
    assert [s.payload for s in await store.threads.get_thread("t1", user_id="alice")] == [{"q": 1}]


# ---- the adapters resolve one tenant per request through the handle ------------------


async def test_mcp_tools_and_resources_run_on_the_requests_handle(store: MemoryStore) -> None:
    pytest.importorskip("mcp", reason="the mcp extra")
    from memstore.mcp.resources import read_resource_text
    from memstore.mcp.tools import call_mcp_tool

    alice, bob = store.tenant("alice"), store.tenant("bob")
    await call_mcp_tool(alice, "remember", {"session_id": "s", "input": "I like tea", "output": ""})
    await alice.update_block("persona", "brief")
    assert (await store.profile(user_id="alice")).episode_count == 1
    found = await call_mcp_tool(alice, "search_memory", {"query": "tea"})
    assert (
        found["results"]
        and (await call_mcp_tool(bob, "search_memory", {"query": "tea"}))["results"] == []
    )
    assert await read_resource_text(alice, "memstore://blocks/persona") == ("text/plain", "brief")
    with pytest.raises(Exception, match="no working block"):
        await read_resource_text(bob, "memstore://blocks/persona")


async def test_the_agents_session_names_its_tenant(store: MemoryStore) -> None:
    pytest.importorskip("agents", reason="the openai-agents extra")
    from memstore.integrations.openai_agents import MemstoreSession

    with pytest.raises(TenantRequired):
        MemstoreSession("conversation", store)
    session = MemstoreSession("conversation", store, user_id="alice")
    await session.add_items([{"role": "user", "content": "hi"}])
    assert [t.thread_id for t in await store.tenant("alice").threads.list_threads()] == [
        session.thread_id
    ]


async def test_a_langgraph_namespace_names_its_tenant_as_store_tenant_does(
    store: MemoryStore,
) -> None:
    pytest.importorskip("langgraph", reason="the langgraph extra")
    from memstore.integrations.langgraph import MemstoreStore

    graph_store = MemstoreStore(store)
    await graph_store.aput((ANONYMOUS, "notes"), "k", {"v": 1})
    await graph_store.aput(("alice", "notes"), "k", {"v": 2})
    assert (await graph_store.aget((ANONYMOUS, "notes"), "k")).value == {"v": 1}  # type: ignore[union-attr]
    assert sorted(await store.list_tenants_cross_tenant()) == sorted([ANONYMOUS, "alice"])
    with pytest.raises(InvalidInput, match="reserved"):
        await graph_store.aput(("__other__", "notes"), "k", {"v": 3})
