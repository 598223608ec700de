"""Per-turn context: the right memory for one agent turn, packed into a token budget.

:func:`pack` is the pure part: it takes candidate items in priority order and
keeps, greedily, each one that still fits. The budget covers both renderings
(:meth:`Context.render` and :meth:`Context.to_messages`), measured with the same
:class:`TokenCounter`, and is re-checked on the final text, so it holds even for
a counter whose counts do not add up across concatenation. How the text reads
(handles, date headers) is :mod:`memstore.services.agent.layout`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memstore.errors import InvalidInput, NotFound
from memstore.services.agent.items import ContextItem, ItemKind
from memstore.services.agent.layout import (
    FOOTER,
    HEADER,
    SECTION_TITLES,
    assign_handles,
    group_header,
    group_key,
    item_line,
    render_items,
)
from memstore.services.agent.tokens import CounterLike, TokenCounter, as_counter

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

# Kinds whose items may be cut short rather than left out: a block is always
# wanted, and the start of a long episode is better than nothing.
_CLIPPABLE = frozenset({ItemKind.BLOCK, ItemKind.EPISODE})


@dataclass(frozen=True, kw_only=True)
class Context:
    """The packed memory of one turn; each item is shown by its ``handle`` (``m1``, …)."""

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

    @property
    def handles(self) -> dict[str, str]:
        """Each handle shown in this context -> the id ``load_memory`` takes."""
        return {i.handle: i.id for i in self.items if i.handle}

    def resolve(self, ref: str) -> str:
        """The id behind ``ref``: a handle of this context (``m3``), or an item's id as is."""
        if not isinstance(ref, str):
            raise InvalidInput(f"a memory reference is a string, got {type(ref).__name__}")
        handles = self.handles
        if ref in handles:
            return handles[ref]
        if ref in set(self.ids):
            return ref
        shown = f"m1 to m{len(handles)}" if handles else "none"
        raise NotFound(f"{ref!r} is not a handle of this context (its handles: {shown})")

    def render(self) -> str:
        """Everything as one text block (empty when nothing fitted)."""
        return render_items(self.items, with_messages=True)

    def render_memory(self) -> str:
        """Blocks, facts and episodes only: the system-message part of :meth:`to_messages`."""
        return render_items(self.items, with_messages=False)

    def to_messages(self, system_prompt: str | None = None) -> list[dict[str, str]]:
        """Chat messages: one system message with the memory, then this session's turns.

        ``system_prompt`` (yours, outside the budget) is put before the memory.
        """
        memory = self.render_memory()
        system = "\n\n".join(p for p in (system_prompt, memory) if p)
        out = [{"role": "system", "content": system}] if system else []
        out += [{"role": str(m.role), "content": m.text} for m in self.messages]
        return out


def render_tokens(items: Sequence[ContextItem], counter: TokenCounter) -> int:
    return counter.count(render_items(items, with_messages=True))


def message_tokens(items: Sequence[ContextItem], counter: TokenCounter, overhead: int) -> int:
    memory = render_items(items, with_messages=False)
    total = counter.count(memory) + overhead if memory else 0
    for item in items:
        if item.kind is ItemKind.MESSAGE:
            total += counter.count(item.text) + overhead
    return total


def _clip(item: ContextItem, room: int, cost: Callable[[ContextItem], int]) -> ContextItem | None:
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
    counter: CounterLike | None = None,
    message_overhead: int = DEFAULT_MESSAGE_OVERHEAD,
) -> Context:
    """Keep candidates (given in priority order) greedily while they fit in ``max_tokens``.

    An item that does not fit is skipped and packing goes on with the next,
    smaller ones — except session messages: once one is left out, older ones
    are too, so the conversation never has a hole. Blocks and episodes that do
    not fit whole are clipped if a useful prefix fits.
    """
    count = as_counter(counter)
    ordered = [replace(c, priority=n, handle="") for n, c in enumerate(candidates)]
    # Costed with the widest handle this context can give, so the real ones never cost more.
    widest = "m" + "9" * len(str(max(1, len(ordered))))
    newline = count.count("\n")
    # The (session, day) groups opened so far: the first episode of each pays its header.
    groups: set[tuple[str, str]] = set()

    def cost(item: ContextItem) -> int:
        # Upper bound of what the item adds to either rendering: its line (and
        # the newline) in the text, or its content plus overhead as a message.
        line = count.count(item_line(item, widest)) + newline
        if item.kind is ItemKind.MESSAGE:
            return max(line, count.count(item.text) + message_overhead)
        key = group_key(item)
        if key is not None and key not in groups:
            line += count.count(group_header(item)) + newline
        return line

    fixed = count.count(HEADER) + count.count(FOOTER) + 2 * newline + message_overhead
    used = fixed
    chosen: list[ContextItem] = []
    dropped: list[str] = []
    opened: set[ItemKind] = set()
    messages_cut = False
    for item in ordered:
        if item.kind is ItemKind.MESSAGE and messages_cut:
            dropped.append(item.id)
            continue
        title = 0 if item.kind in opened else count.count(SECTION_TITLES[item.kind]) + newline
        room = max_tokens - used - title
        need = cost(item)
        if need > room and item.kind in _CLIPPABLE and room >= MIN_CLIP_TOKENS:
            clipped = _clip(item, room, cost)
            if clipped is not None:
                item, need = clipped, cost(clipped)
        if need <= room:
            key = group_key(item)
            if key is not None:
                groups.add(key)
            chosen.append(replace(item, tokens=need))
            used += need + title
            opened.add(item.kind)
        else:
            dropped.append(item.id)
            messages_cut = messages_cut or item.kind is ItemKind.MESSAGE

    # The sum of costs bounds the real total for a counter that is subadditive
    # over concatenation (both built-in ones are). For any other counter,
    # measure the final text and shed the lowest-priority items.
    def fits(items: list[ContextItem]) -> bool:
        shown = assign_handles(items)
        return (
            render_tokens(shown, count) <= max_tokens
            and message_tokens(shown, count, message_overhead) <= max_tokens
        )

    shed = False
    while chosen and not fits(chosen):
        dropped.append(chosen.pop().id)
        shed = True
    chosen = assign_handles(chosen)
    if chosen:
        measured = max(
            render_tokens(chosen, count), message_tokens(chosen, count, message_overhead)
        )
        used_tokens = measured if shed else max(used, measured)
    else:
        used_tokens = 0
    return Context(
        items=chosen,
        max_tokens=max_tokens,
        used_tokens=used_tokens,
        dropped=dropped,
        message_overhead=message_overhead,
    )
