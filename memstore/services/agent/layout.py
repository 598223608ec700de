"""How a packed context reads: short handles, one date header per session and day.

A context is read on every turn, so every label costs on every turn. An item's
line is ``[m3] `` and its text, nothing else: an episode's date goes on its
group's header line (one group per session and day, oldest first; the exact
time is in ``load_memory``), and a past turn reads ``what the user said → what
the assistant answered``, the roles named once in the section title. Handles
(``m1``, ``m2``, …) are given in reading order, so they are short and stable
within one context; :meth:`Context.resolve` maps them back to ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from memstore.services.agent.items import ContextItem, ItemKind

__all__ = [
    "FOOTER",
    "HEADER",
    "SECTION_TITLES",
    "assign_handles",
    "episode_groups",
    "group_header",
    "group_key",
    "item_line",
    "render_items",
]

HEADER = "<memory>\nCite by [handle]; load_memory takes it."
FOOTER = "</memory>"

SECTION_TITLES = {
    ItemKind.BLOCK: "## Working memory",
    ItemKind.FACT: "## Facts (true now)",
    ItemKind.EPISODE: "## Past turns (user → assistant)",
    ItemKind.MESSAGE: "## This session so far (oldest first)",
}

Group = tuple[str | None, list[ContextItem]]


def group_key(item: ContextItem) -> tuple[str, str] | None:
    """The (day, session) an episode is listed under; None for undated items."""
    if item.kind is not ItemKind.EPISODE or item.occurred_at is None:
        return None
    return (item.occurred_at.date().isoformat(), item.session_id or "")


def group_header(first: ContextItem) -> str:
    """The header of a group: its date, e.g. ``8 May 2023``."""
    when = first.occurred_at
    assert when is not None
    return f"{when.day} {when:%b %Y}"


def item_line(item: ContextItem, handle: str) -> str:
    head = f"[{handle}] "
    if item.role is not None:
        head += f"{item.role}: "
    return head + item.text


def episode_groups(items: Iterable[ContextItem]) -> list[Group]:
    """Episodes in reading order: undated ones first (by ranking), then one group per
    session and day, oldest first, each in time order (ties in ranking order)."""
    undated = sorted(
        (i for i in items if i.kind is ItemKind.EPISODE and group_key(i) is None),
        key=lambda i: i.order,
    )
    groups: dict[tuple[str, str], list[ContextItem]] = {}
    for item in items:
        key = group_key(item)
        if key is not None:
            groups.setdefault(key, []).append(item)
    out: list[Group] = [(None, undated)] if undated else []
    ordered = sorted(
        (sorted(members, key=lambda i: (i.occurred_at, i.priority)) for members in groups.values()),
        key=lambda members: (members[0].occurred_at, members[0].session_id or ""),
    )
    out += [(group_header(members[0]), members) for members in ordered]
    return out


def _reading_order(items: Sequence[ContextItem]) -> list[ContextItem]:
    out: list[ContextItem] = []
    for kind in ItemKind:
        if kind is ItemKind.EPISODE:
            out += [item for _, members in episode_groups(items) for item in members]
        else:
            out += sorted((i for i in items if i.kind is kind), key=lambda i: i.order)
    return out


def assign_handles(items: Sequence[ContextItem]) -> list[ContextItem]:
    """``items`` (same order) with handles ``m1``, ``m2``, … given in reading order."""
    handles = {id(item): f"m{n}" for n, item in enumerate(_reading_order(items), start=1)}
    return [replace(item, handle=handles[id(item)]) for item in items]


def render_items(items: Sequence[ContextItem], *, with_messages: bool) -> str:
    """The memory text of ``items`` (each shown by its handle, or its id if it has none)."""
    parts: list[str] = []
    for kind in ItemKind:
        if kind is ItemKind.MESSAGE and not with_messages:
            continue
        if kind is ItemKind.EPISODE:
            groups = episode_groups(items)
            if groups:
                parts.append(SECTION_TITLES[kind])
            for header, members in groups:
                if header is not None:
                    parts.append(header)
                parts += [item_line(i, i.handle or i.id) for i in members]
            continue
        section = sorted((i for i in items if i.kind is kind), key=lambda i: i.order)
        if section:
            parts.append(SECTION_TITLES[kind])
            parts += [item_line(i, i.handle or i.id) for i in section]
    if not parts:
        return ""
    return "\n".join([HEADER, *parts, FOOTER])
