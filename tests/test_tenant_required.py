"""Tenants are named, never assumed: a tenant-scoped call that names no tenant is refused
with :class:`~memstore.TenantRequired` and writes nothing; the anonymous tenant is asked
for by name (``memstore.ANONYMOUS``); operations across tenants are separate methods.

The calls are the catalogue of tests/bound_cases.py (one call of every public method,
with arguments that do real work on a seeded tenant), made through :class:`_Unnamed`,
which drops each call's ``user_id`` (and an ``Episode``'s or ``Fact``'s): the same call
a program makes when it forgets the tenant.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

import memstore
from memstore import (
    ANONYMOUS,
    Episode,
    Fact,
    InvalidInput,
    MemoryStore,
    TenantRequired,
    ThreadBuffer,
)
from tests.bound_cases import CASES, USER, seed
from tests.conftest import ManualClock
from tests.store_parts import own_engine, tenant_rows

# Not one tenant's call (the generator's store_wide table says the same of the store),
# or one whose tenant is named another way: an import's tenant is the dump's.
NOT_TENANT_SCOPED = {
    "backend": "a property of the store",
    "bind": "makes a view; the call it makes through the view names its tenant",
    "consolidator": "makes a worker; its run() names the tenant, or takes every one",
    "embedder": "a property of the store",
    "langgraph_items": "the LangGraph adapter's service; its calls name the tenant",
    "consolidate_all_tenants": "cross-tenant by name",
    "flush_access": "writes what named calls buffered",
    "gc_all_tenants": "cross-tenant by name",
    "import_": "the dump names the tenant (FROM_DUMP); user_id=None is refused below",
    "import_rows": "as import_",
    "list_tenants_cross_tenant": "cross-tenant by name",
    "loop": "a property of the store",
    "now": "the store's clock",
    "reads_unrecorded": "a context manager around named calls",
    "tenant": "makes the handle; tenant(None) is refused below",
    "tool_definitions": "schemas, no tenant",
}


def _unnamed(value: Any) -> Any:
    if isinstance(value, Episode | Fact):
        return dataclasses.replace(value, user_id=None)
    if isinstance(value, list):
        return [_unnamed(v) for v in value]
    return value


class _Unnamed:
    """``target`` with every call's tenant left out, as a forgetful program calls it."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._target, name)
        if name == "threads":
            return _Unnamed(member)
        if not callable(member):
            return member

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("user_id", None)
            return member(*[_unnamed(a) for a in args], **kwargs)

        return call


async def _fingerprint(url: str) -> list[str]:
    """Every row of every tenant table, as text (vectors aside), in a stable order."""
    async with own_engine(url) as engine, engine.connect() as conn:
        return await tenant_rows(conn)


async def _run(result: Any) -> Any:
    if inspect.isawaitable(result):
        return await result
    if isinstance(result, AsyncIterator):
        try:
            return await anext(result)
        finally:
            await result.aclose()  # type: ignore[attr-defined]
    return result


def _tenant_scoped_cases() -> list[str]:
    return sorted(name for name in CASES if name not in NOT_TENANT_SCOPED)


async def test_every_tenant_scoped_call_without_a_tenant_is_refused_and_writes_nothing(
    db_url: str,
) -> None:
    clock = ManualClock()
    async with MemoryStore.open(db_url, clock=clock) as store:
        async with own_engine(db_url) as engine, AsyncSession(engine) as session:
            seeded = await seed(store, clock, session)
        await store.flush_access()
        before = await _fingerprint(db_url)
        unnamed = _Unnamed(store)
        not_refused: dict[str, str] = {}
        for name in _tenant_scoped_cases():
            try:
                result = await _run(CASES[name].call(unnamed, seeded))
            except TenantRequired as refused:
                assert "store.tenant(" in str(refused) and "ANONYMOUS" in str(refused)
            else:
                not_refused[name] = repr(result)[:80]
        assert not_refused == {}, f"called without a tenant, these ran: {not_refused}"
        # Nothing was written, nor buffered to be written by the next flush.
        await store.flush_access()
        assert await _fingerprint(db_url) == before
        assert await store.list_tenants_cross_tenant() == [USER]


def test_the_catalogue_covers_every_tenant_scoped_method() -> None:
    """Each public method taking ``user_id`` (store and threads) is in the loop above."""
    scoped = {
        name
        for name, member in inspect.getmembers(MemoryStore)
        if not name.startswith("_")
        and callable(member)
        and "user_id" in inspect.signature(member).parameters
    } | {
        f"threads.{name}"
        for name, member in inspect.getmembers(ThreadBuffer)
        if not name.startswith("_") and callable(member)
    }
    covered = set(_tenant_scoped_cases())
    # import_/import_rows: the dump names the tenant; tenant(None): its own test.
    assert scoped - covered <= {"import_", "import_rows", "tenant"}, sorted(scoped - covered)
    # And the calls whose tenant is inside their argument.
    assert {"remember", "remember_many", "add_fact", "assert_fact"} <= covered


async def test_a_batch_with_one_unnamed_episode_writes_none_of_it(store: MemoryStore) -> None:
    named = Episode(session_id="s", user_id="alice", input="named")
    with pytest.raises(TenantRequired):
        await store.remember_many([named, Episode(session_id="s", input="forgot the tenant")])
    assert await store.list_tenants_cross_tenant() == []


async def test_the_anonymous_tenant_is_asked_for_by_name_and_round_trips(
    store: MemoryStore,
) -> None:
    episode_id = await store.remember(Episode(session_id="s", user_id=ANONYMOUS, input="hi"))
    found = await store.get_episode(episode_id, user_id=ANONYMOUS)
    assert found.user_id == ANONYMOUS == memstore.ANONYMOUS == "__anonymous__"
    assert await store.recall("hi", user_id="alice") == []
    assert await store.list_tenants_cross_tenant() == [ANONYMOUS]
    # An export of it imports back (into another tenant, and into itself once empty).
    dump = await store.export(user_id=ANONYMOUS)
    assert dump["user_id"] == ANONYMOUS
    assert (await store.import_(dump, user_id="bob"))["episodes"] == 1
    await store.forget(user_id=ANONYMOUS)
    assert (await store.import_(dump))["episodes"] == 1
    assert [e.id for e in await store.recall("hi", user_id=ANONYMOUS)] == [episode_id]
    # Other reserved names stay reserved.
    with pytest.raises(InvalidInput, match="reserved"):
        await store.recall("hi", user_id="__other__")


async def test_an_old_dump_of_the_anonymous_bucket_imports_as_the_anonymous_tenant(
    store: MemoryStore,
) -> None:
    await store.remember(Episode(session_id="s", user_id=ANONYMOUS, input="old turn"))
    dump = await store.export(user_id=ANONYMOUS)
    await store.forget(user_id=ANONYMOUS)
    old = {**dump, "user_id": None}  # what a dump of the anonymous bucket recorded
    assert (await store.import_(old))["episodes"] == 1
    assert [e.input for e in await store.recall("old", user_id=ANONYMOUS)] == ["old turn"]
    # Naming no tenant for the import is still refused.
    with pytest.raises(TenantRequired):
        await store.import_(dump, user_id=None)


async def test_cross_tenant_operations_are_separate_methods(db_url: str) -> None:
    clock = ManualClock()
    async with MemoryStore.open(db_url, clock=clock) as store:
        for user in ("alice", "bob"):
            await store.remember(Episode(session_id="s", user_id=user, input="I like tea"))
            await store.threads.append("t", {}, from_id="a", to_id="b", user_id=user)
        with pytest.raises(TenantRequired):
            await store.consolidate()
        with pytest.raises(TenantRequired):
            await store.gc()
        assert "all_tenants" not in inspect.signature(MemoryStore.gc).parameters
        assert not hasattr(ThreadBuffer, "gc") and not hasattr(ThreadBuffer, "gc_all_tenants")
        assert (await store.consolidate(user_id="alice")).processed == 1
        assert (await store.consolidate_all_tenants()).processed == 1  # bob's, alice's done
        clock.advance(hours=2)
        report = await store.gc(user_id="alice", thread_idle_ttl_seconds=60)
        assert [(t.user_id, t.thread_id) for t in report.threads] == [("alice", "t")]
        report = await store.gc_all_tenants(thread_idle_ttl_seconds=60)
        assert [(t.user_id, t.thread_id) for t in report.threads] == [("bob", "t")]
