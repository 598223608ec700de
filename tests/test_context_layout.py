"""How a context reads: short handles that resolve, one date header per session and day,
and a budget that holds in a real tokenizer's tokens, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore import Episode, Fact, InvalidInput, MemoryStore, NotFound
from memstore.services.agent import ApproxTokenCounter, ContextItem, ItemKind, pack
from tests.minilm_tokens import minilm_counter

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


def turn(session: str, when: datetime, said: str, answer: str = "") -> Episode:
    return Episode(user_id="alice", session_id=session, input=said, output=answer, occurred_at=when)


async def test_handles_resolve_through_load_memory(store: MemoryStore) -> None:
    await store.update_block("persona", "Alice, a botanist.", user_id="alice")
    await store.add_fact(Fact(user_id="alice", subject="alice", predicate="owns", object="a fern"))
    await store.remember_many(
        [turn("old", T0 + timedelta(minutes=n), f"fern care {n}", "water it") for n in range(3)]
        + [turn("now", T0 + timedelta(days=1), "how is my fern?", "green")]
    )
    ctx = await store.context(user_id="alice", session_id="now", query="fern", max_tokens=4000)
    assert {i.kind for i in ctx.items} == set(ItemKind)
    rendered = ctx.render()
    starts = [line.split(" ", 1)[0] for line in rendered.splitlines()]
    shown = [s for s in starts if s in ctx.handles]
    assert shown == [f"m{n}" for n in range(1, len(ctx.items) + 1)]
    assert "episode:" not in rendered and "fact:" not in rendered
    assert not any(
        item.id.split(":", 1)[1] in rendered for item in ctx.items if item.kind != "block"
    )
    for item in ctx.items:
        assert ctx.resolve(item.handle) == item.id and ctx.resolve(item.id) == item.id
        loaded = await store.call_tool(
            "load_memory", {"id": item.handle}, user_id="alice", context=ctx
        )
        assert loaded["id"] == item.id
    # A handle means nothing without its context, and nothing beyond it.
    with pytest.raises(InvalidInput, match="handle of one packed context"):
        await store.call_tool("load_memory", {"id": "m1"}, user_id="alice")
    with pytest.raises(NotFound, match="not a handle of this context"):
        await store.call_tool("load_memory", {"id": "m999"}, user_id="alice", context=ctx)
    # Another tenant cannot read alice's items through her context's handles.
    episode = next(i for i in ctx.items if i.kind is ItemKind.EPISODE)
    with pytest.raises(NotFound):
        await store.call_tool("load_memory", {"id": episode.handle}, user_id="bob", context=ctx)


async def test_episodes_are_grouped_under_one_date_header(store: MemoryStore) -> None:
    await store.remember_many(
        [
            turn("a", T0 + timedelta(minutes=7), "fern pot", "clay"),
            turn("a", T0, "fern watering", "weekly"),
            turn("a", T0 + timedelta(minutes=3), "fern light"),
            turn("b", T0 + timedelta(hours=8), "Tim: my fern is called Fred"),
            turn("c", T0 + timedelta(days=2, hours=-1), "", "fern spores are brown dots"),
            turn("c", T0 + timedelta(days=2), "fern price", "ten euros"),
            turn("d", T0 + timedelta(days=370), "fern repotted"),
        ]
    )
    ctx = await store.context(user_id="alice", query="fern", max_tokens=4000)
    assert len(ctx.episodes) == 7
    section = ctx.render().split("## Past turns (user → assistant)\n", 1)[1]
    # One group per session and day, oldest first, each in time order, with no id,
    # time, session or role label on a line; a date is written where it changes
    # (the year where it changes too), a second session on the same day is set off
    # by a blank line.
    assert section.removesuffix("\n</memory>").splitlines() == [
        "1 Jan 2026",
        "m1 fern watering → weekly",
        "m2 fern light",
        "m3 fern pot → clay",
        "",
        "m4 Tim: my fern is called Fred",
        "3 Jan",
        "m5 → fern spores are brown dots",
        "m6 fern price → ten euros",
        "6 Jan 2027",
        "m7 fern repotted",
    ]
    # What the packer accounted for is what the text costs, not less.
    assert ApproxTokenCounter().count(ctx.render()) <= ctx.used_tokens


MINILM = minilm_counter()


def fits(ctx: Any, budget: int, count: Any) -> None:
    assert count(ctx.render()) <= ctx.used_tokens <= budget or not ctx.items
    chat = sum(count(m["content"]) + ctx.message_overhead for m in ctx.to_messages())
    assert chat <= budget


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=300), max_size=20),
    kinds=st.lists(st.sampled_from(list(ItemKind)), min_size=20, max_size=20),
    minutes=st.lists(st.integers(0, 4000), min_size=20, max_size=20),
    budget=st.integers(1, 1500),
)
def test_pack_fits_a_real_tokenizer(
    texts: list[str], kinds: list[ItemKind], minutes: list[int], budget: int
) -> None:
    items = [
        ContextItem(
            id=f"{'episode' if kind in (ItemKind.EPISODE, ItemKind.MESSAGE) else kind}:{n}",
            kind=kind,
            text=text,
            role="user" if kind is ItemKind.MESSAGE else None,
            occurred_at=T0 + timedelta(minutes=m) if kind is ItemKind.EPISODE else None,
            session_id=f"s{m % 3}",
        )
        for n, (text, kind, m) in enumerate(zip(texts, kinds, minutes, strict=False))
    ]
    fits(pack(items, budget, counter=MINILM), budget, MINILM)


async def test_context_fits_a_real_tokenizer(store: MemoryStore) -> None:
    await store.update_block("persona", "Alice, a botanist who keeps ferns. " * 20, user_id="alice")
    await store.remember_many(
        [
            turn(f"s{n % 4}", T0 + timedelta(hours=n), f"Fern note {n}: " + "spores, fronds! " * n)
            for n in range(30)
        ]
    )
    for budget in (40, 150, 400, 1000, 3000):
        ctx = await store.context(user_id="alice", query="fern", max_tokens=budget, counter=MINILM)
        fits(ctx, budget, MINILM)
    # More pieces than characters (punctuation, digits): the default estimate still
    # counts at least what the tokenizer does.
    ctx = await store.context(user_id="alice", query="fern", max_tokens=3000)
    assert MINILM(ctx.render()) <= ctx.used_tokens <= 3000


async def test_the_same_budget_carries_more_turns_than_their_ids_would_allow(
    store: MemoryStore,
) -> None:
    """Each turn costs its bare text plus 8 at most, so a budget carries every turn
    that fits so costed: a line with the full id, date and session label did not."""
    speakers = ("Tim", "Ana")
    await store.remember_many(
        [
            turn(
                f"session_{day}",
                T0 + timedelta(days=day),
                f"{speakers[n % 2]}: I am reading a book about ferns, chapter {day}.{n}",
            )
            for day in range(4)
            for n in range(8)
        ]
    )
    count = ApproxTokenCounter().count
    with store.reads_unrecorded():
        ranked = [m.episode for m in await store.recall_scored("ferns", user_id="alice", limit=32)]
        for budget in (400, 600, 800):
            ctx = await store.context(user_id="alice", query="ferns", max_tokens=budget)
            spent, cut = 0, []
            for episode in ranked:
                spent += count(episode.input) + 8
                if spent > budget:
                    break
                cut.append(episode.id)
            carried = {i.id.removeprefix("episode:") for i in ctx.episodes}
            assert carried >= set(cut), (budget, len(carried), len(cut))
    assert len(carried) > len(cut)  # at 800 the context holds two turns more
