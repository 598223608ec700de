"""Per-turn context packing: budget, priority order, both renderings, on both backends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import Episode, Fact, MemoryStore
from memstore.services.agent import (
    TOOL_SCHEMAS,
    ApproxTokenCounter,
    CharTokenCounter,
    ContextItem,
    ItemKind,
    pack,
)
from memstore.services.agent.context import DEFAULT_MESSAGE_OVERHEAD, message_tokens
from tests.conftest import _wipe

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ["paris", "garden", "fern", "rust", "python", "coffee", "tokyo", "violin", "é", "42"]


def within_budget(ctx: object, max_tokens: int, counter: object) -> None:
    from memstore.services.agent import Context

    assert isinstance(ctx, Context)
    count = counter.count  # type: ignore[attr-defined]
    assert ctx.used_tokens <= max_tokens
    assert count(ctx.render()) <= ctx.used_tokens or not ctx.items
    assert count(ctx.render()) <= max_tokens
    chat = ctx.to_messages()
    chat_tokens = sum(count(m["content"]) + DEFAULT_MESSAGE_OVERHEAD for m in chat)
    assert chat_tokens <= max_tokens
    assert chat_tokens == message_tokens(ctx.items, counter, DEFAULT_MESSAGE_OVERHEAD)  # type: ignore[arg-type]


# ---- the pure packer ---------------------------------------------------------------


class LumpyCounter:
    """Not subadditive: a joined text costs more than its parts (forces the re-check)."""

    def count(self, text: str) -> int:
        return len(text) // 5 + 3 * text.count("\n")


item_strategy = st.builds(
    ContextItem,
    id=st.from_regex(r"(block|fact|episode):[a-z0-9]{1,8}", fullmatch=True),
    kind=st.sampled_from(list(ItemKind)),
    text=st.text(min_size=1, max_size=400),
    role=st.none(),
)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(item_strategy, max_size=25),
    max_tokens=st.integers(min_value=1, max_value=1500),
    counter=st.sampled_from([ApproxTokenCounter(), CharTokenCounter(), LumpyCounter()]),
)
def test_pack_never_exceeds_budget(
    items: list[ContextItem], max_tokens: int, counter: object
) -> None:
    fixed = [
        i
        if i.kind is not ItemKind.MESSAGE
        else ContextItem(id=i.id, kind=i.kind, text=i.text, role="user")
        for i in items
    ]
    ctx = pack(fixed, max_tokens, counter=counter)  # type: ignore[arg-type]
    within_budget(ctx, max_tokens, counter)
    # Kept items keep their relative priority order.
    assert [i.priority for i in ctx.items] == sorted(i.priority for i in ctx.items)
    assert len(ctx.items) + len(ctx.dropped) == len(items)


def test_pack_equal_items_keeps_exactly_a_priority_prefix() -> None:
    items = [ContextItem(id=f"fact:{n:04d}", kind=ItemKind.FACT, text="x" * 40) for n in range(30)]
    counter = ApproxTokenCounter()
    full = pack(items, 10_000, counter=counter)
    assert [i.id for i in full.items] == [i.id for i in items]
    for k in range(1, 30):
        budget = pack(items[:k], 10_000, counter=counter).used_tokens
        ctx = pack(items, budget, counter=counter)
        assert [i.id for i in ctx.items] == [i.id for i in items[:k]]
        assert ctx.dropped == [i.id for i in items[k:]]


def test_pack_never_leaves_a_hole_in_the_conversation() -> None:
    long = ContextItem(id="episode:b", kind=ItemKind.MESSAGE, text="y" * 400, role="user")
    newest = ContextItem(id="episode:c", kind=ItemKind.MESSAGE, text="short", role="user")
    oldest = ContextItem(id="episode:a", kind=ItemKind.MESSAGE, text="tiny", role="user")
    ctx = pack([newest, long, oldest], 80)
    assert ctx.ids == ["episode:c"]  # "tiny" would fit but sits behind the missing one


def test_pack_clips_a_block_that_does_not_fit_whole() -> None:
    block = ContextItem(id="block:persona", kind=ItemKind.BLOCK, text="persona: " + "word " * 500)
    ctx = pack([block], 120)
    assert ctx.ids == ["block:persona"] and ctx.items[0].truncated
    assert ApproxTokenCounter().count(ctx.render()) <= 120
    # The mark the load_memory tool definition explains.
    assert ctx.items[0].text.endswith(" […]")
    assert "'[…]' was cut short" in TOOL_SCHEMAS["load_memory"]["description"]


def test_empty_and_tiny_budgets_render_nothing() -> None:
    block = ContextItem(id="block:a", kind=ItemKind.BLOCK, text="a: hello")
    for budget in (1, 5):
        ctx = pack([block], budget)
        assert ctx.items == [] and ctx.render() == "" and ctx.to_messages() == []
        assert ctx.used_tokens == 0


# ---- context() over real stores --------------------------------------------------------

store_strategy = st.fixed_dictionaries(
    {
        "blocks": st.lists(
            st.tuples(st.sampled_from(["persona", "goals", "notes", "style"]), st.integers(0, 600)),
            max_size=4,
        ),
        "facts": st.lists(
            st.tuples(st.sampled_from(WORDS), st.sampled_from(WORDS), st.integers(0, 300)),
            max_size=8,
        ),
        "episodes": st.lists(
            st.tuples(
                st.sampled_from(["s0", "s1", "s2"]),
                st.lists(st.sampled_from(WORDS), min_size=1, max_size=60),
                st.integers(0, 1000),
            ),
            max_size=15,
        ),
    }
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=store_strategy,
    max_tokens=st.integers(min_value=1, max_value=3000),
    query=st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
    session=st.sampled_from([None, "s0", "s1"]),
    chars=st.booleans(),
)
def test_context_never_exceeds_budget_on_random_stores(
    db_url: str,
    data: dict[str, list],
    max_tokens: int,
    query: str,  # type: ignore[type-arg]
    session: str | None,
    chars: bool,
) -> None:
    counter = CharTokenCounter(3) if chars else ApproxTokenCounter()

    async def scenario() -> None:
        await _wipe(db_url)
        async with MemoryStore.open(db_url) as store:
            for name, size in data["blocks"]:
                await store.update_block(name, "b" * size, user_id="u")
            for n, (subject, obj, size) in enumerate(data["facts"]):
                await store.add_fact(
                    Fact(
                        user_id="u",
                        subject=subject,
                        predicate=f"p{n}",
                        object=obj + " " + "o" * size,
                    )
                )
            await store.remember_many(
                [
                    Episode(
                        user_id="u",
                        session_id=s,
                        input=" ".join(words),
                        output="ok " * pad,
                        occurred_at=T0 + timedelta(minutes=n),
                    )
                    for n, (s, words, pad) in enumerate(data["episodes"])
                ]
            )
            ctx = await store.context(
                user_id="u", session_id=session, query=query, max_tokens=max_tokens, counter=counter
            )
            within_budget(ctx, max_tokens, counter)
            # Blocks come first and stay in pinned order.
            names = [b.name for b in await store.working(user_id="u")]
            shown = [b.id.removeprefix("block:") for b in ctx.blocks]
            assert shown == [n for n in names if n in shown]
            assert all(i.kind is ItemKind.BLOCK for i in ctx.items[: len(ctx.blocks)])
            # Past episodes come from other sessions only.
            for item in ctx.episodes:
                assert session is None or item.session_id != session

    asyncio.run(scenario())


async def seeded(store: MemoryStore) -> None:
    await store.update_block("persona", "Alice, a botanist.", user_id="alice")
    await store.update_block("goals", "Grow ferns in Paris.", user_id="alice")
    for n, obj in enumerate(["Paris", "ferns", "Paris ferns"]):
        await store.add_fact(
            Fact(
                user_id="alice", subject="alice", predicate=f"likes_{n}", object=obj, valid_from=T0
            )
        )
    await store.remember_many(
        [
            Episode(
                user_id="alice",
                session_id="old",
                input=f"ferns question {n}",
                output=f"ferns answer {n}",
                occurred_at=T0 + timedelta(hours=n),
            )
            for n in range(3)
        ]
        + [
            Episode(
                user_id="alice",
                session_id="now",
                input=f"turn {n} about ferns",
                output=f"reply {n}",
                occurred_at=T0 + timedelta(days=1, hours=n),
            )
            for n in range(6)
        ]
    )


async def test_priority_order_is_kept_at_every_budget(store: MemoryStore) -> None:
    await seeded(store)
    args = {"user_id": "alice", "session_id": "now", "query": "ferns paris"}
    with store.reads_unrecorded():  # keep the ranking fixed across calls
        full = await store.context(**args, max_tokens=100_000)
        ordered = sorted(full.items, key=lambda i: i.priority)
        kinds = [i.kind for i in ordered]
        # blocks, the 4 newest messages, facts, other-session episodes, older messages
        assert kinds == (
            [ItemKind.BLOCK] * 2
            + [ItemKind.MESSAGE] * 4
            + [ItemKind.FACT] * 3
            + [ItemKind.EPISODE] * 3
            + [ItemKind.MESSAGE] * 8
        )
        assert [b.id for b in full.blocks] == ["block:persona", "block:goals"]
        texts = [m.text for m in full.messages]
        assert texts == [t for n in range(6) for t in (f"turn {n} about ferns", f"reply {n}")]
        assert full.to_messages()[1:] == [
            {"role": m.role, "content": m.text} for m in full.messages
        ]
        for k in range(1, len(ordered) + 1):
            budget = pack(ordered[:k], 100_000).used_tokens
            ctx = await store.context(**args, max_tokens=budget)
            got = sorted(ctx.items, key=lambda i: i.priority)
            assert [i.id for i in got] == [i.id for i in ordered[:k]], k
            assert ctx.used_tokens <= budget


async def test_context_items_carry_citable_handles_and_ids(store: MemoryStore) -> None:
    await seeded(store)
    ctx = await store.context(user_id="alice", session_id="now", query="ferns", max_tokens=4000)
    rendered = ctx.render()
    for item in ctx.items:
        assert rendered.count(f"\n{item.handle} ") == 1
        loaded = await store.call_tool("load_memory", {"id": item.id}, user_id="alice")
        assert loaded["id"] == item.id


async def test_other_tenants_never_appear(store: MemoryStore) -> None:
    await seeded(store)
    await store.update_block("persona", "MALLORY SECRET", user_id="mallory")
    await store.remember(Episode(user_id="mallory", session_id="now", input="ferns SECRET"))
    ctx = await store.context(
        user_id="alice", session_id="now", query="ferns secret", max_tokens=100_000
    )
    assert "SECRET" not in ctx.render()
