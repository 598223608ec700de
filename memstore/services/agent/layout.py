"""How a packed context reads: short handles, a date only where it changes.

A context is read on every turn, so every label costs on every turn. An item's
line is its handle (``m3``), a space and its text, nothing else: the handles
are explained by the ``load_memory`` tool, which takes them. Past turns are
listed oldest first, one group per session and day, each in time order; a
group's header line carries its date, with the year only where it differs from
the group above, and a group on the same day as the one above is set off by a
blank line instead (the exact time is in ``load_memory``). A past turn reads
``what the user said → what the assistant answered``, the roles named once in
the section title. Handles (``m1``, ``m2``, …) are given in reading order, so
they are short and stable within one context; :meth:`Context.resolve` maps them
back to ids.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date

from memstore.services.agent.items import ContextItem, ItemKind

__all__ = [
    "FOOTER",
    "HEADER",
    "SECTION_TITLES",
    "DateHeaders",
    "assign_handles",
    "episode_groups",
    "group_key",
    "item_line",
    "render_items",
]

HEADER = "<memory>"
FOOTER = "</memory>"

SECTION_TITLES = {
    ItemKind.BLOCK: "## Working memory",
    ItemKind.FACT: "## Facts (true now)",
    ItemKind.EPISODE: "## Past turns (user → assistant)",
    ItemKind.MESSAGE: "## This session so far (oldest first)",
}

# A group's header line (None: no line; "": a blank line) and its episodes.
Group = tuple[str | None, list[ContextItem]]


def group_key(item: ContextItem) -> tuple[str, str] | None:
    """The (day, session) an episode is listed under; None for undated items."""
    if item.kind is not ItemKind.EPISODE or item.occurred_at is None:
        return None
    return (item.occurred_at.date().isoformat(), item.session_id or "")


class DateHeaders:
    """What the groups' header lines cost, as groups are added in any order.

    A header depends only on its day and the day of the group above it, so the
    sorted days of the groups so far say exactly what adding one more costs: its
    own header, and the change to the header of the group below it (which may
    now need its year, or no longer need it).
    """

    def __init__(self, count: Callable[[str], int], newline: int) -> None:
        self._count = count
        self._newline = newline
        self._days: list[date] = []

    def _cost(self, day: date | None, above: date | None) -> int:
        return 0 if day is None else self._count(_date_line(day, above)) + self._newline

    def _around(self, day: date) -> tuple[date | None, date | None]:
        at = bisect.bisect_right(self._days, day)
        above = self._days[at - 1] if at else None
        below = self._days[at] if at < len(self._days) else None
        return above, below

    def added(self, day: date) -> int:
        """What a new group of ``day`` adds to the headers' cost."""
        above, below = self._around(day)
        return self._cost(day, above) + self._cost(below, day) - self._cost(below, above)

    def add(self, day: date) -> None:
        bisect.insort_right(self._days, day)


def _date_line(day: date, above: date | None) -> str:
    """``day`` as a header under a group of day ``above``: the year only where it
    changes, nothing (a blank line) on the same day."""
    if above == day:
        return ""
    if above is not None and above.year == day.year:
        return f"{day.day} {day:%b}"
    return f"{day.day} {day:%b %Y}"


def item_line(item: ContextItem, handle: str) -> str:
    head = f"{handle} "
    if item.role is not None:
        head += f"{item.role}: "
    return head + item.text


def episode_groups(items: Iterable[ContextItem]) -> list[Group]:
    """Episodes in reading order: undated ones first (by ranking), then one group per
    session and day, oldest first, each in time order (ties in ranking order)."""
    items = list(items)
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
    above: date | None = None
    for members in ordered:
        when = members[0].occurred_at
        assert when is not None
        out.append((_date_line(when.date(), above), members))
        above = when.date()
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
