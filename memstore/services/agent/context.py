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
from dataclasses import dataclass
from typing import overload

from memstore.errors import InvalidInput, NotFound
from memstore.services.agent.items import ContextItem, ItemKind, evolve
from memstore.services.agent.layout import (
    FOOTER,
    HEADER,
    SECTION_TITLES,
    DateHeaders,
    assign_handles,
    group_key,
    render_items,
)
from memstore.services.agent.tokens import CounterLike, CountOnce, TokenCounter, as_counter

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
# What a clipped line ends with; the load_memory tool says what it means.
CLIP_MARK = " […]"

# Kinds whose items may be cut short rather than left out: a block is always
# wanted, and the start of a long episode is better than nothing.
_CLIPPABLE = frozenset({ItemKind.BLOCK, ItemKind.EPISODE})


class _OfKind:
    """A context's items of one kind, in their order: ``context.facts`` and its siblings."""

    def __init__(self, kind: ItemKind) -> None:
        self.kind = kind

    @overload
    def __get__(self, context: None, owner: type) -> _OfKind: ...
    @overload
    def __get__(self, context: Context, owner: type) -> list[ContextItem]: ...
    def __get__(self, context: Context | None, owner: type) -> _OfKind | list[ContextItem]:
        return self if context is None else context.of_kind(self.kind)


@dataclass(frozen=True, kw_only=True)
class Context:
    """The packed memory of one turn; each item is shown by its ``handle`` (``m1``, …).

    ``blocks``, ``facts``, ``episodes`` and ``messages`` are its items of that kind, in
    the order they are shown (:meth:`of_kind`).
    """

    items: list[ContextItem]
    max_tokens: int
    # The larger of the packer's accounting and both renderings' real counts;
    # never above ``max_tokens``.
    used_tokens: int
    dropped: list[str]
    message_overhead: int = DEFAULT_MESSAGE_OVERHEAD

    def of_kind(self, kind: ItemKind | str) -> list[ContextItem]:
        """The items of ``kind``, in the order they are shown."""
        return sorted((i for i in self.items if i.kind == kind), key=lambda i: i.order)

    blocks = _OfKind(ItemKind.BLOCK)
    facts = _OfKind(ItemKind.FACT)
    episodes = _OfKind(ItemKind.EPISODE)
    messages = _OfKind(ItemKind.MESSAGE)

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


def _clip(
    item: ContextItem, room: int, cost: Callable[[ContextItem, str], int], extra: int = 0
) -> ContextItem | None:
    """The longest prefix of ``item`` (plus a mark) whose cost, ``cost(item, text)`` +
    ``extra``, fits in ``room``."""
    if room < MIN_CLIP_TOKENS:
        return None
    text = item.text
    lo, hi, best = 1, len(text) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = text[:mid].rstrip() + CLIP_MARK
        if cost(item, candidate) + extra <= room:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return None if best is None else evolve(item, text=best, truncated=True)


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

    The frame (the memory tags, section titles and the chat message's overhead)
    is no reason to leave a ranked episode out: up to the frame's cost in all,
    an episode that does not fit whole gets its room from the longest episodes
    packed before it, clipped by what is missing. With the default counter an
    episode's line costs at most its text + 8 (handle, what its date header
    adds, arrow), so a prefix of the episode ranking whose texts + 8 fit in
    ``max_tokens`` is carried whole but for the clipped ends of its longest
    turns, unless the budget is too small for the frame.
    """
    count = CountOnce(as_counter(counter))
    ordered = [evolve(c, priority=n, handle="") for n, c in enumerate(candidates)]
    # Costed with the widest handle this context can give, so the real ones never cost more.
    widest = "m" + "9" * len(str(max(1, len(ordered))))
    newline = count.count("\n")
    # The (session, day) groups opened so far: the first episode of each pays
    # what its header adds.
    groups: set[tuple[str, str]] = set()
    headers = DateHeaders(count.count, newline)

    def text_cost(item: ContextItem, text: str) -> int:
        # Upper bound of what the item (with ``text``) adds to either rendering: its
        # line (and the newline) in the text, or its content plus overhead as a message.
        head = f"{widest} " if item.role is None else f"{widest} {item.role}: "
        line = count.count(head + text) + newline
        if item.kind is ItemKind.MESSAGE:
            return max(line, count.count(text) + message_overhead)
        return line

    def line_cost(item: ContextItem) -> int:
        return text_cost(item, item.text)

    def header_cost(item: ContextItem) -> int:
        key = group_key(item)
        if key is None or key in groups or item.occurred_at is None:
            return 0
        return headers.added(item.occurred_at.date())

    fixed = count.count(HEADER) + count.count(FOOTER) + 2 * newline + message_overhead
    used = fixed
    # Frame tokens not yet paid back by clipping the longest episodes.
    credit = fixed
    chosen: list[ContextItem] = []
    # Each packed item as it was recalled, so a second clip starts from its whole text.
    whole: dict[int, ContextItem] = {}
    # The line cost of each packed episode, by its index in ``chosen``.
    lines: dict[int, int] = {}
    dropped: list[str] = []
    opened: set[ItemKind] = set()
    messages_cut = False
    for item in ordered:
        if item.kind is ItemKind.MESSAGE and messages_cut:
            dropped.append(item.id)
            continue
        title = 0 if item.kind in opened else count.count(SECTION_TITLES[item.kind]) + newline
        room = max_tokens - used - title
        # Clipping changes the text only: the group, so the header's cost, stays.
        header = header_cost(item)
        need = line_cost(item) + header
        short = need - room
        if item.kind is ItemKind.EPISODE and 0 < short <= credit + title:
            made = _room_from_longest(chosen, lines, whole, line_cost(item), short, text_cost)
            if made is not None:
                freed = sum(chosen[n].tokens - c.tokens for n, c in made.items())
                for n, c in made.items():
                    chosen[n] = c
                    lines[n] = line_cost(c)
                used -= freed
                room += freed
                credit -= short
        if need > room and item.kind in _CLIPPABLE:
            clipped = _clip(item, room, text_cost, header)
            if clipped is not None:
                whole[item.priority] = item
                item, need = clipped, line_cost(clipped) + header
        if need <= room:
            key = group_key(item)
            if key is not None and key not in groups and item.occurred_at is not None:
                groups.add(key)
                headers.add(item.occurred_at.date())
            whole.setdefault(item.priority, item)
            if item.kind is ItemKind.EPISODE:
                lines[len(chosen)] = line_cost(item)
            chosen.append(evolve(item, tokens=need))
            used += need + title
            credit += title
            opened.add(item.kind)
        else:
            dropped.append(item.id)
            messages_cut = messages_cut or item.kind is ItemKind.MESSAGE

    # The sum of costs bounds the real total for a counter that is subadditive
    # over concatenation (both built-in ones are). For any other counter,
    # measure the final text and shed the lowest-priority items.
    def measure(items: list[ContextItem]) -> tuple[list[ContextItem], int]:
        """The items with their handles, and the larger of both renderings' counts."""
        if not items:
            return [], 0
        shown = assign_handles(items)
        tokens = max(render_tokens(shown, count), message_tokens(shown, count, message_overhead))
        return shown, tokens

    shown, measured = measure(chosen)
    shed = False
    while chosen and measured > max_tokens:
        dropped.append(chosen.pop().id)
        shed = True
        shown, measured = measure(chosen)
    if shown:
        used_tokens = measured if shed else max(used, measured)
    else:
        used_tokens = 0
    return Context(
        items=shown,
        max_tokens=max_tokens,
        used_tokens=used_tokens,
        dropped=dropped,
        message_overhead=message_overhead,
    )


def _room_from_longest(
    chosen: list[ContextItem],
    lines: dict[int, int],
    whole: dict[int, ContextItem],
    own: int,
    short: int,
    text_cost: Callable[[ContextItem, str], int],
) -> dict[int, ContextItem] | None:
    """``short`` tokens freed by clipping the longest packed episodes whose line costs
    more than ``own``, longest first, none below ``MIN_CLIP_TOKENS``: the clipped
    items by their index in ``chosen`` (``tokens`` updated), or None if they cannot
    free as much. ``lines`` holds each packed episode's line cost by that index;
    ``text_cost`` is an item's line cost with a given text."""
    longer = sorted(
        ((line, n) for n, line in lines.items() if line > own),
        key=lambda t: (-t[0], -chosen[t[1]].priority),
    )
    out: dict[int, ContextItem] = {}
    for line, n in longer:
        if short <= 0:
            break
        packed = chosen[n]
        clipped = _clip(whole[packed.priority], max(line - short, MIN_CLIP_TOKENS), text_cost)
        if clipped is None:
            continue
        freed = line - text_cost(clipped, clipped.text)
        if freed > 0:
            out[n] = evolve(clipped, tokens=packed.tokens - freed)
            short -= freed
    return out if short <= 0 else None
