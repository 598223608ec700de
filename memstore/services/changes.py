"""``store.changes()``: a tenant's committed changes, live, resumable from a position.

Reads the change log (memstore.repositories.changes) that every write of a
block, a fact or a thread appends to in its own transaction, and sleeps on the
store's change signal (memstore.db.signal) between reads. The signal is only a
wake-up hint; what is delivered is always read back with a tenant-filtered query.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from memstore.services.base import Service
from memstore.types import Change, ChangeKind

__all__ = ["ChangeService"]


class ChangeService(Service):
    """The change feed of one store."""

    async def changes(
        self,
        *,
        user_id: str | None = None,
        kinds: Iterable[ChangeKind | str] | None = None,
        after: str | None = None,
    ) -> AsyncIterator[Change]:
        """Yield the tenant's committed changes, oldest first, waiting for new ones forever.

        ``after=None`` starts with the next change committed after the call;
        ``after=""`` starts at the oldest change the log still holds; any other
        value is a :attr:`Change.position` yielded before, and the iteration
        resumes right after it: at-least-once, in commit order, nothing skipped
        (a tenant's changes are numbered in commit order). ``kinds`` keeps only
        those kinds (``FORGET`` and ``CHANGES_PRUNED`` are always reported).
        Stop by leaving the ``async for`` (or ``aclose()``).
        """
        raise NotImplementedError
        yield  # pragma: no cover
