"""``pack()`` and the default token counter give what they gave before they were made cheap.

tests/pack_reference.py is that code, copied unchanged; every generated input must get
the same counts and the same packed context (items, order, cuts, used tokens, dropped
ids) from both, with the default counter, the other built-in one, a counter whose
counts do not add up over concatenation, and a real tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.services.agent import ApproxTokenCounter, CharTokenCounter, ContextItem, ItemKind
from memstore.services.agent.context import pack
from tests import pack_reference as reference
from tests.minilm_tokens import minilm_counter

T0 = datetime(2025, 3, 1, tzinfo=UTC)

# Pieces whose joins make letter runs around 4 and digit runs around 3 long, and put
# punctuation, non-Latin letters, emoji and every kind of whitespace next to them.
PIECES = [
    "a", "abc", "abcd", "abcde", "Zebra", "FERNS", "1", "12", "123", "1234", "x1y22",
    "→", "é", "café", "日本語", "😀", ",", ".", "-", "_", "(", "'", "[…]",
    " ", "  ", "\n", "\t", "\r\n", "\xa0", "\u3000", "\u2028", "\x1c", "\x85",
]  # fmt: skip
mixed_text = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)
any_text = st.one_of(mixed_text, st.text(max_size=300), st.just(""))


class LumpyCounter:
    """Not subadditive: a joined text costs more than its parts (the packer re-measures)."""

    def count(self, text: str) -> int:
        return len(text) // 5 + 3 * text.count("\n")


def words(text: str) -> int:
    """A user's counter given as a plain function."""
    return len(text.split()) + text.count("\n")


# (counter for the new code, the same for the reference)
COUNTERS: dict[str, tuple[object, object]] = {
    "approx": (None, reference.ApproxTokenCounter()),
    "chars": (CharTokenCounter(), CharTokenCounter()),
    "lumpy": (LumpyCounter(), LumpyCounter()),
    "callable": (words, words),
}


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(mixed_text, st.text(max_size=400)))
def test_the_default_counter_counts_as_before(text: str) -> None:
    assert ApproxTokenCounter().count(text) == reference.ApproxTokenCounter().count(text)


def test_the_default_counter_counts_every_code_point_as_before() -> None:
    # Each code point between letters and digits: whether it is whitespace, a letter,
    # a digit or another character decides the runs around it.
    new, old = ApproxTokenCounter(), reference.ApproxTokenCounter()
    for start in range(0, 0x110000, 8192):
        block = " ".join(f"ab{chr(c)}12{chr(c)}x" for c in range(start, start + 8192))
        assert new.count(block) == old.count(block), f"code points from {start:#x}"


def items_from(
    specs: list[tuple[ItemKind, str, int | None, int]], roles: bool
) -> list[ContextItem]:
    out = []
    for n, (kind, text, minutes, session) in enumerate(specs):
        episode = kind is ItemKind.EPISODE
        out.append(
            ContextItem(
                id=f"{'episode' if kind in (ItemKind.EPISODE, ItemKind.MESSAGE) else kind}:{n}",
                kind=kind,
                text=text,
                order=n,
                role=("user", "assistant")[n % 2] if kind is ItemKind.MESSAGE and roles else None,
                occurred_at=T0 + timedelta(minutes=minutes)
                if episode and minutes is not None
                else None,
                session_id=f"s{session}" if episode else None,
            )
        )
    return out


item_specs = st.lists(
    st.tuples(
        st.sampled_from(list(ItemKind)),
        any_text,
        st.one_of(st.none(), st.integers(0, 3 * 366 * 24 * 60)),
        st.integers(0, 2),
    ),
    max_size=30,
)


def budgets_for(items: list[ContextItem], count: object, extra: list[int]) -> list[int]:
    """0, 1, the budgets just around what all of ``items`` take, and ``extra``."""
    whole = reference.pack(items, 10**9, counter=count).used_tokens  # type: ignore[arg-type]
    return sorted({0, 1, max(0, whole - 1), whole, whole + 1, *extra})


def assert_same(
    items: list[ContextItem], budget: int, name: str, overhead: int | None = None
) -> None:
    new, old = COUNTERS[name]
    kw = {} if overhead is None else {"message_overhead": overhead}
    got = pack(items, budget, counter=new, **kw)  # type: ignore[arg-type]
    want = reference.pack(items, budget, counter=old, **kw)  # type: ignore[arg-type]
    assert got == want, f"budget {budget}, counter {name}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=item_specs,
    roles=st.booleans(),
    name=st.sampled_from(sorted(COUNTERS)),
    extra=st.lists(st.integers(0, 3000), max_size=3),
    overhead=st.one_of(st.none(), st.integers(0, 6)),
)
def test_pack_packs_as_before(
    specs: list[tuple[ItemKind, str, int | None, int]],
    roles: bool,
    name: str,
    extra: list[int],
    overhead: int | None,
) -> None:
    items = items_from(specs, roles)
    for budget in budgets_for(items, COUNTERS[name][1], extra):
        assert_same(items, budget, name, overhead)


@pytest.mark.parametrize("name", sorted(COUNTERS))
def test_huge_single_items_are_cut_as_before(name: str) -> None:
    # One long block and one long episode: each is clipped by binary search over its text.
    long = " ".join(f"word{n} → naïve, {n * 7} 日本" for n in range(3000))
    items = items_from(
        [
            (ItemKind.BLOCK, "persona: " + long, None, 0),
            (ItemKind.EPISODE, long, 60, 1),
            (ItemKind.EPISODE, "short → turn", 30, 1),
            (ItemKind.MESSAGE, long[:5000], None, 0),
        ],
        roles=True,
    )
    for budget in (0, 1, 15, 16, 17, 40, 100, 1000, 5000, 40_000):
        assert_same(items, budget, name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=item_specs, extra=st.lists(st.integers(0, 1500), max_size=2))
def test_pack_packs_as_before_with_a_real_tokenizer(
    specs: list[tuple[ItemKind, str, int | None, int]], extra: list[int]
) -> None:
    tokenizer: Callable[[str], int] = minilm_counter()
    items = items_from(specs, roles=True)
    for budget in budgets_for(items, tokenizer, extra):
        got = pack(items, budget, counter=tokenizer)
        assert got == reference.pack(items, budget, counter=tokenizer), f"budget {budget}"
