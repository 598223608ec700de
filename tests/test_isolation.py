"""Tenant isolation is a security property: random operations by several tenants
(including the anonymous bucket) never let one tenant read another's data, and
``forget`` erases one tenant completely while leaving the others untouched."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from conftest import _wipe, table_counts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import ANONYMOUS, Episode, Fact, MemoryStore
from memstore.core.tenancy import storage_user_id

# Near-miss names on purpose: case, whitespace and prefixes must not merge tenants.
TENANTS: list[str | None] = ["alice", "Alice", "alice ", "bob", "al", ANONYMOUS]
WORDS = ["paris", "coffee", "meeting", "project", "shared"]


def marker(tenant: str | None) -> str:
    return f"tenant{TENANTS.index(tenant)}"


operation = st.tuples(
    st.sampled_from(["remember", "fact", "block", "append"]),
    st.sampled_from(TENANTS),
    st.sampled_from(WORDS),
    st.integers(min_value=0, max_value=2),
)


async def apply(store: MemoryStore, op: tuple[str, str | None, str, int]) -> None:
    kind, tenant, word, n = op
    mark = marker(tenant)
    if kind == "remember":
        await store.remember(
            Episode(
                user_id=tenant,
                session_id=f"s{n}",
                input=f"{word} shared {mark}",
                output=f"ok {mark}",
            )
        )
    elif kind == "fact":
        await store.add_fact(
            Fact(user_id=tenant, subject=mark, predicate="likes", object=f"{word} shared")
        )
    elif kind == "block":
        await store.update_block(f"b{n}", f"{word} {mark}", user_id=tenant)
    else:
        await store.append_block(f"b{n}", f" {word} {mark}", user_id=tenant)


def markers_in(text: str) -> set[str]:
    return set(re.findall(r"tenant\d+", text))


async def assert_only_own(store: MemoryStore, tenant: str | None) -> None:
    own = {marker(tenant)}
    for query in ["shared", "paris coffee meeting", ""]:
        for ep in await store.recall(query, user_id=tenant, limit=50):
            assert ep.user_id == tenant and markers_in(ep.input + ep.output) == own
        for fact in await store.recall_facts(query, user_id=tenant, limit=50):
            assert fact.user_id == tenant and markers_in(fact.subject) == own
    for block in await store.working(user_id=tenant):
        assert block.user_id == tenant and markers_in(block.content) == own
    for n in range(3):
        for message in await store.session_messages(f"s{n}", user_id=tenant, limit=50):
            assert markers_in(message.content) == own
    profile = await store.profile(user_id=tenant)
    for fact in profile.sample_facts:
        assert markers_in(fact.subject) == own
    dump = await store.export(user_id=tenant)
    assert markers_in(repr(dump["tables"])) <= own


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=25), victim=st.sampled_from(TENANTS))
def test_no_read_crosses_tenants_and_forget_is_complete(
    db_url: str, ops: list[tuple[str, str | None, str, int]], victim: str | None
) -> None:
    async def scenario() -> None:
        await _wipe(db_url)
        async with MemoryStore.open(db_url) as store:
            for op in ops:
                await apply(store, op)
            for tenant in TENANTS:
                await assert_only_own(store, tenant)

            before = {t: await table_counts(db_url, storage_user_id(t)) for t in TENANTS}
            exported = await store.export(user_id=victim)
            victim_rows = before[victim]
            assert {k: len(v) for k, v in exported["tables"].items()} == victim_rows

            removed = await store.forget(user_id=victim)
            assert removed == sum(victim_rows.values())
            after = {t: await table_counts(db_url, storage_user_id(t)) for t in TENANTS}
            assert set(after[victim].values()) == {0}
            for tenant in TENANTS:
                if tenant != victim:
                    assert after[tenant] == before[tenant]

    asyncio.run(scenario())


async def test_export_is_json_serialisable_and_complete(store: MemoryStore) -> None:
    import json

    await store.remember(
        Episode(
            user_id="alice",
            session_id="s",
            input="hi",
            output="yo",
            metadata={"k": [1, 2.5, None, "é"]},
        )
    )
    await store.add_fact(Fact(user_id="alice", subject="alice", predicate="likes", object="tea"))
    await store.update_block("persona", "p", user_id="alice")
    dump: dict[str, Any] = json.loads(json.dumps(await store.export(user_id="alice")))
    tables = dump["tables"]
    assert tables["episodes"][0]["metadata"] == {"k": [1, 2.5, None, "é"]}
    assert tables["facts"][0]["object"] == "tea"
    assert tables["blocks"][0]["content"] == "p"
    assert len(tables["block_versions"]) == 1
    assert dump["user_id"] == "alice"
