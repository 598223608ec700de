"""The packer and the default token counter as they were before they were made cheap.

The reference the equality tests hold :func:`memstore.services.agent.context.pack` and
:class:`memstore.services.agent.tokens.ApproxTokenCounter` to: the same counts and the
same packed context for every input. Copied verbatim from memstore at git fe8a80f
(memstore/services/agent/context.py from ``render_tokens`` on, and tokens.py's
``ApproxTokenCounter`` and ``as_counter``); only the imports and ``__all__`` are
this module's own. The layout it renders with is memstore's (unchanged).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from memstore.errors import InvalidInput
from memstore.services.agent.context import (
    _CLIPPABLE,
    CLIP_MARK,
    DEFAULT_MESSAGE_OVERHEAD,
    MIN_CLIP_TOKENS,
    Context,
)
from memstore.services.agent.items import ContextItem, ItemKind
from memstore.services.agent.layout import (
    FOOTER,
    HEADER,
    SECTION_TITLES,
    DateHeaders,
    assign_handles,
    group_key,
    item_line,
    render_items,
)
from memstore.services.agent.tokens import CallableTokenCounter, CounterLike, TokenCounter

__all__ = ["ApproxTokenCounter", "as_counter", "message_tokens", "pack", "render_tokens"]


# Latin letter runs, digit runs, or any other single non-space character. Not
# core.text.words: a token estimate must count punctuation, CJK and emoji, which words drop.
_PIECE = re.compile(r"[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]")


class ApproxTokenCounter:
    """A deliberately pessimistic estimate of BPE token counts, with no model download.

    Latin words cost one token per started four letters, numbers one per started
    three digits (how GPT-style tokenizers split them), and every other
    non-space character (punctuation, CJK, emoji) one token. English prose
    comes out somewhat above real tokenizer counts, which is the safe side of a
    budget. Joining texts never costs more than the parts, so per-item counts
    add up to an upper bound of the whole.
    """

    def count(self, text: str) -> int:
        total = 0
        for piece in _PIECE.findall(text):
            first = piece[0]
            if first.isascii() and first.isalpha():
                total += math.ceil(len(piece) / 4)
            elif first.isascii() and first.isdigit():
                total += math.ceil(len(piece) / 3)
            else:
                total += 1
        return total


def as_counter(counter: CounterLike | None) -> TokenCounter:
    """``counter`` as a :class:`TokenCounter`; the default estimate when None."""
    if counter is None:
        return ApproxTokenCounter()
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return CallableTokenCounter(counter)
    raise InvalidInput("counter must have a count(text) -> int method or be a function text -> int")


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
    if room < MIN_CLIP_TOKENS:
        return None
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

    The frame (the memory tags, section titles and the chat message's overhead)
    is no reason to leave a ranked episode out: up to the frame's cost in all,
    an episode that does not fit whole gets its room from the longest episodes
    packed before it, clipped by what is missing. With the default counter an
    episode's line costs at most its text + 8 (handle, what its date header
    adds, arrow), so a prefix of the episode ranking whose texts + 8 fit in
    ``max_tokens`` is carried whole but for the clipped ends of its longest
    turns, unless the budget is too small for the frame.
    """
    count = as_counter(counter)
    ordered = [replace(c, priority=n, handle="") for n, c in enumerate(candidates)]
    # Costed with the widest handle this context can give, so the real ones never cost more.
    widest = "m" + "9" * len(str(max(1, len(ordered))))
    newline = count.count("\n")
    # The (session, day) groups opened so far: the first episode of each pays
    # what its header adds.
    groups: set[tuple[str, str]] = set()
    headers = DateHeaders(count.count, newline)

    def line_cost(item: ContextItem) -> int:
        # Upper bound of what the item adds to either rendering: its line (and
        # the newline) in the text, or its content plus overhead as a message.
        line = count.count(item_line(item, widest)) + newline
        if item.kind is ItemKind.MESSAGE:
            return max(line, count.count(item.text) + message_overhead)
        return line

    def header_cost(item: ContextItem) -> int:
        key = group_key(item)
        if key is None or key in groups or item.occurred_at is None:
            return 0
        return headers.added(item.occurred_at.date())

    def cost(item: ContextItem) -> int:
        return line_cost(item) + header_cost(item)

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
        need = cost(item)
        short = need - room
        if item.kind is ItemKind.EPISODE and 0 < short <= credit + title:
            made = _room_from_longest(chosen, lines, whole, line_cost(item), short, line_cost)
            if made is not None:
                freed = sum(chosen[n].tokens - c.tokens for n, c in made.items())
                for n, c in made.items():
                    chosen[n] = c
                    lines[n] = line_cost(c)
                used -= freed
                room += freed
                credit -= short
        if need > room and item.kind in _CLIPPABLE:
            clipped = _clip(item, room, cost)
            if clipped is not None:
                whole[item.priority] = item
                item, need = clipped, cost(clipped)
        if need <= room:
            key = group_key(item)
            if key is not None and key not in groups and item.occurred_at is not None:
                groups.add(key)
                headers.add(item.occurred_at.date())
            whole.setdefault(item.priority, item)
            if item.kind is ItemKind.EPISODE:
                lines[len(chosen)] = line_cost(item)
            chosen.append(replace(item, tokens=need))
            used += need + title
            credit += title
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


def _room_from_longest(
    chosen: list[ContextItem],
    lines: dict[int, int],
    whole: dict[int, ContextItem],
    own: int,
    short: int,
    line_cost: Callable[[ContextItem], int],
) -> dict[int, ContextItem] | None:
    """``short`` tokens freed by clipping the longest packed episodes whose line costs
    more than ``own``, longest first, none below ``MIN_CLIP_TOKENS``: the clipped
    items by their index in ``chosen`` (``tokens`` updated), or None if they cannot
    free as much. ``lines`` holds each packed episode's line cost by that index."""
    longer = sorted(
        ((line, n) for n, line in lines.items() if line > own),
        key=lambda t: (-t[0], -chosen[t[1]].priority),
    )
    out: dict[int, ContextItem] = {}
    for line, n in longer:
        if short <= 0:
            break
        packed = chosen[n]
        clipped = _clip(whole[packed.priority], max(line - short, MIN_CLIP_TOKENS), line_cost)
        if clipped is None:
            continue
        freed = line - line_cost(clipped)
        if freed > 0:
            out[n] = replace(clipped, tokens=packed.tokens - freed)
            short -= freed
    return out if short <= 0 else None
