"""Per-turn context: the right memory for one agent turn, packed into a token budget.

:func:`pack` is the pure part: it takes candidate items in priority order and
keeps, greedily, each one that still fits. The budget covers both renderings
(:meth:`Context.render` and :meth:`Context.to_messages`), measured with the same
:class:`TokenCounter`, and is re-checked on the final text, so it holds even for
a counter whose counts do not add up across concatenation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from memstore.services.agent.tokens import ApproxTokenCounter, TokenCounter

__all__ = [
    "DEFAULT_MESSAGE_OVERHEAD",
    "Context",
    "ContextItem",
    "ItemKind",
    "pack",
]

# Chat formats spend a few tokens per message on role and separators.
DEFAULT_MESSAGE_OVERHEAD = 4
# Clipping an item shorter than this leaves nothing worth reading.
MIN_CLIP_TOKENS = 16
CLIP_MARK = " …[truncated; load_memory for the full text]"

_HEADER = (
    "<memory>\nMemory for this turn. Cite items by their [id]; "
    "call load_memory(id) for an item's full text."
)
_FOOTER = "</memory>"


class ItemKind(StrEnum):
    BLOCK = "block"
    FACT = "fact"
    EPISODE = "episode"
    MESSAGE = "message"


_SECTION_TITLES = {
    ItemKind.BLOCK: "## Working memory",
    ItemKind.FACT: "## Facts (true now)",
    ItemKind.EPISODE: "## Relevant past episodes",
    ItemKind.MESSAGE: "## This session so far (oldest first)",
}
# Kinds whose items may be cut short rather than left out: a block is always
# wanted, and the start of a long episode is better than nothing.
_CLIPPABLE = frozenset({ItemKind.BLOCK, ItemKind.EPISODE})


@dataclass(frozen=True, kw_only=True)
class ContextItem:
    """One piece of memory in a context, citable by ``id``.

    ``id`` is what :func:`load_memory` accepts: ``block:<name>``,
    ``fact:<fact_id>`` or ``episode:<id>`` (a session message carries the id of
    the episode it came from). ``priority`` is its position in packing order
    (0 was considered first); ``order`` is its position inside its section.
    ``score`` is a fact's or episode's relevance to the query, 0..1 (the
    ``score`` of ``recall_scored`` / ``recall_facts_scored``); None for blocks
    and messages, which are not recalled.
    """

    id: str
    kind: ItemKind
    text: str
    priority: int = 0
    order: int = 0
    score: float | None = None
    role: str | None = None
    truncated: bool = False
    tokens: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        prefix = f"[{self.id}] "
        if self.role is not None:
            prefix += f"{self.role}: "
        return prefix + self.text


@dataclass(frozen=True, kw_only=True)
class Context:
    """The packed memory of one turn."""

    items: list[ContextItem]
    max_tokens: int
    # The larger of the packer's accounting and both renderings' real counts;
    # never above ``max_tokens``.
    used_tokens: int
    dropped: list[str]
    message_overhead: int = DEFAULT_MESSAGE_OVERHEAD

    def of_kind(self, kind: ItemKind | str) -> list[ContextItem]:
        return sorted((i for i in self.items if i.kind == kind), key=lambda i: i.order)

    @property
    def blocks(self) -> list[ContextItem]:
        return self.of_kind(ItemKind.BLOCK)

    @property
    def facts(self) -> list[ContextItem]:
        return self.of_kind(ItemKind.FACT)

    @property
    def episodes(self) -> list[ContextItem]:
        return self.of_kind(ItemKind.EPISODE)

    @property
    def messages(self) -> list[ContextItem]:
        return self.of_kind(ItemKind.MESSAGE)

    @property
    def ids(self) -> list[str]:
        return [i.id for i in self.items]

    def render(self) -> str:
        """Everything as one text block (empty when nothing fitted)."""
        return _render(self.items, with_messages=True)

    def render_memory(self) -> str:
        """Blocks, facts and episodes only: the system-message part of :meth:`to_messages`."""
        return _render(self.items, with_messages=False)

    def to_messages(self, system_prompt: str | None = None) -> list[dict[str, str]]:
        """Chat messages: one system message with the memory, then this session's turns.

        ``system_prompt`` (yours, outside the budget) is put before the memory.
        """
        memory = self.render_memory()
        system = "\n\n".join(p for p in (system_prompt, memory) if p)
        out = [{"role": "system", "content": system}] if system else []
        out += [{"role": str(m.role), "content": m.text} for m in self.messages]
        return out


def _render(items: Sequence[ContextItem], *, with_messages: bool) -> str:
    kinds = [k for k in ItemKind if with_messages or k is not ItemKind.MESSAGE]
    parts: list[str] = []
    for kind in kinds:
        section = sorted((i for i in items if i.kind == kind), key=lambda i: i.order)
        if section:
            parts.append(_SECTION_TITLES[kind])
            parts.extend(i.line() for i in section)
    if not parts:
        return ""
    return "\n".join([_HEADER, *parts, _FOOTER])


def render_tokens(items: Sequence[ContextItem], counter: TokenCounter) -> int:
    return counter.count(_render(items, with_messages=True))


def message_tokens(items: Sequence[ContextItem], counter: TokenCounter, overhead: int) -> int:
    memory = _render(items, with_messages=False)
    total = counter.count(memory) + overhead if memory else 0
    for item in items:
        if item.kind is ItemKind.MESSAGE:
            total += counter.count(item.text) + overhead
    return total


def _clip(item: ContextItem, room: int, cost: Any) -> ContextItem | None:
    """The longest prefix of ``item`` (plus a mark) whose cost fits in ``room``."""
    lo, hi, best = 1, len(item.text) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = replace(item, text=item.text[:mid].rstrip() + CLIP_MARK, truncated=True)
        if cost(candidate) <= room:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def pack(
    candidates: Sequence[ContextItem],
    max_tokens: int,
    *,
    counter: TokenCounter | None = None,
    message_overhead: int = DEFAULT_MESSAGE_OVERHEAD,
) -> Context:
    """Keep candidates (given in priority order) greedily while they fit in ``max_tokens``.

    An item that does not fit is skipped and packing goes on with the next,
    smaller ones — except session messages: once one is left out, older ones
    are too, so the conversation never has a hole. Blocks and episodes that do
    not fit whole are clipped if a useful prefix fits.
    """
    counter = counter or ApproxTokenCounter()
    ordered = [replace(c, priority=n) for n, c in enumerate(candidates)]

    def cost(item: ContextItem) -> int:
        # Upper bound of what the item adds to either rendering: its line (and
        # the newline) in the text, or its content plus overhead as a message.
        line = counter.count(item.line()) + 1
        if item.kind is ItemKind.MESSAGE:
            return max(line, counter.count(item.text) + message_overhead)
        return line

    fixed = counter.count(_HEADER) + counter.count(_FOOTER) + 2 + message_overhead
    used = fixed
    chosen: list[ContextItem] = []
    dropped: list[str] = []
    opened: set[ItemKind] = set()
    messages_cut = False
    for item in ordered:
        if item.kind is ItemKind.MESSAGE and messages_cut:
            dropped.append(item.id)
            continue
        title = 0 if item.kind in opened else counter.count(_SECTION_TITLES[item.kind]) + 1
        room = max_tokens - used - title
        need = cost(item)
        if need > room and item.kind in _CLIPPABLE and room >= MIN_CLIP_TOKENS:
            clipped = _clip(item, room, cost)
            if clipped is not None:
                item, need = clipped, cost(clipped)
        if need <= room:
            chosen.append(replace(item, tokens=need))
            used += need + title
            opened.add(item.kind)
        else:
            dropped.append(item.id)
            messages_cut = messages_cut or item.kind is ItemKind.MESSAGE

    # The sum of per-item costs bounds the real total for a counter that is
    # subadditive over concatenation (both built-in ones are). For any other
    # counter, measure the final text and shed the lowest-priority items.
    def fits(items: list[ContextItem]) -> bool:
        return (
            render_tokens(items, counter) <= max_tokens
            and message_tokens(items, counter, message_overhead) <= max_tokens
        )

    while chosen and not fits(chosen):
        dropped.append(chosen.pop().id)
    if chosen:
        kinds = {i.kind for i in chosen}
        accounted = (
            fixed
            + sum(i.tokens for i in chosen)
            + sum(counter.count(_SECTION_TITLES[k]) + 1 for k in kinds)
        )
        used_tokens = max(
            accounted,
            render_tokens(chosen, counter),
            message_tokens(chosen, counter, message_overhead),
        )
    else:
        used_tokens = 0
    return Context(
        items=chosen,
        max_tokens=max_tokens,
        used_tokens=used_tokens,
        dropped=dropped,
        message_overhead=message_overhead,
    )
