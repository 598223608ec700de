"""Which of a subscriber's ``memstore://`` resources a tenant's committed change touches.

Plain Python (no MCP SDK): :class:`TenantWatch` follows one tenant's
``store.changes`` (every process's commits, tenant-filtered by the store), and
:func:`touched` maps each change to the subscribed URIs it makes stale. The
MCP wiring is :mod:`memstore.mcp.subscribe`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from memstore.mcp.resources import ResourceRef
from memstore.types import Change, ChangeKind

if TYPE_CHECKING:
    from memstore.store import MemoryStore

__all__ = ["WATCHED_KINDS", "TenantWatch", "touched"]

# The kinds that make a block or thread resource stale. FORGET, CHANGES_PRUNED and
# CHANGES_RESET are always reported by the feed: after any, every subscribed URI may be stale.
WATCHED_KINDS = (
    ChangeKind.BLOCK_UPDATED,
    ChangeKind.BLOCK_DELETED,
    ChangeKind.THREAD_APPENDED,
    ChangeKind.THREAD_DELETED,
)
_EVERYTHING_STALE = frozenset(
    {ChangeKind.FORGET, ChangeKind.CHANGES_PRUNED, ChangeKind.CHANGES_RESET}
)
_KIND_OF = {
    ChangeKind.BLOCK_UPDATED: "block",
    ChangeKind.BLOCK_DELETED: "block",
    ChangeKind.THREAD_APPENDED: "thread",
    ChangeKind.THREAD_DELETED: "thread",
}


def touched(subscribed: Mapping[str, ResourceRef], change: Change) -> list[str]:
    """The URIs in ``subscribed`` that ``change`` (of the same tenant) makes stale."""
    kind = _KIND_OF.get(change.kind)
    if kind is None:
        if change.kind in _EVERYTHING_STALE:
            return list(subscribed)
        return []  # facts: no fact resource
    return [uri for uri, ref in subscribed.items() if ref.kind == kind and ref.key == change.key]


class TenantWatch:
    """``async with TenantWatch(store, user) as changes``: the tenant's changes from entry on."""

    def __init__(self, store: MemoryStore, user_id: str | None) -> None:
        self._store = store
        self._user_id = user_id
        self._feed: AsyncIterator[Change] | None = None

    async def __aenter__(self) -> AsyncIterator[Change]:
        # The start is read here, not on the feed's first step: whatever the caller
        # answers after entering, every change committed from now on is delivered.
        start = await self._store.change_position(user_id=self._user_id)
        self._feed = self._store.changes(user_id=self._user_id, kinds=WATCHED_KINDS, after=start)
        return self._feed

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        feed, self._feed = self._feed, None
        aclose = getattr(feed, "aclose", None)
        if aclose is not None:
            await aclose()
