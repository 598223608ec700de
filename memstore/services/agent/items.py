"""The pieces of a per-turn context: a :class:`ContextItem` per block, fact, episode, message."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = ["ContextItem", "ItemKind", "evolve"]


class ItemKind(StrEnum):
    BLOCK = "block"
    FACT = "fact"
    EPISODE = "episode"
    MESSAGE = "message"


@dataclass(frozen=True, kw_only=True)
class ContextItem:
    """One piece of memory in a context.

    ``id`` is the item's durable id, which :func:`load_memory` accepts:
    ``block:<name>``, ``fact:<fact_id>`` or ``episode:<id>`` (a session message
    carries the id of the episode it came from). ``handle`` is its short name in
    one packed context (``m1``, ``m2``, … in rendering order), which the rendered
    text shows and which :meth:`Context.resolve` and ``load_memory`` (given that
    context) turn back into ``id``; empty before packing. ``priority`` is its
    position in packing order (0 was considered first); ``order`` is its position
    inside its kind's ranking. ``score`` is a fact's or episode's relevance to the
    query, 0..1 (the ``score`` of ``recall_scored`` / ``recall_facts_scored``);
    None for blocks and messages, which are not recalled. An episode's
    ``occurred_at`` and ``session_id`` place it under its session's date header
    instead of being repeated on its line.
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
    handle: str = ""
    occurred_at: datetime | None = None
    session_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """The item's line on its own: its handle (its id before packing), then its text."""
        prefix = f"{self.handle or self.id} "
        if self.role is not None:
            prefix += f"{self.role}: "
        return prefix + self.text


def evolve(item: ContextItem, **changes: Any) -> ContextItem:
    """``dataclasses.replace(item, **changes)`` for the packer's own field names.

    The same item (fields shared, as ``replace`` shares them), made without running
    ``__init__`` through the fields' introspection, which cost several times more per
    item: packing copies every candidate and every packed item.
    """
    if not _FIELDS.issuperset(changes):
        raise TypeError(f"ContextItem has no field {sorted(set(changes) - _FIELDS)}")
    new = object.__new__(ContextItem)
    values = new.__dict__
    values.update(item.__dict__)
    values.update(changes)
    return new


_FIELDS = frozenset(f.name for f in fields(ContextItem))
