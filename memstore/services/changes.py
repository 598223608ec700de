"""``store.changes()``: a tenant's committed changes, live, resumable from a position.

Reads the change log (memstore.repositories.changes) that every write of a
block, a fact or a thread appends to in its own transaction, and sleeps on the
store's change signal (memstore.db.signal) between reads. The signal is only a
wake-up hint; what is delivered is always read back with a tenant-filtered query.

A position is ``"<epoch>:<seq>"``: the tenant's log epoch (random, new after a
``forget`` and after an import) and the number of the change. Numbers are
claimed in commit order (see the repository), so resuming after number n misses
nothing committed; a number past the log's end is reported, never waited past.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from memstore.core.tenancy import TenantId, public_user_id, storage_user_id
from memstore.errors import InvalidInput
from memstore.repositories.changes import ChangeHead, ChangeLogRepository
from memstore.services.base import Service
from memstore.services.change_position import change_position
from memstore.services.watch import watching
from memstore.telemetry import delivered
from memstore.types import Change, ChangeKind

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["ChangeService", "parse_position"]

_BATCH = 256
_POSITION = re.compile(r"([0-9a-f-]{1,36}):([0-9]{1,18})")


def parse_position(after: object) -> tuple[str | None, int] | None:
    """``after=`` of :meth:`ChangeService.changes` as (epoch, seq); None for None."""
    if after is None:
        return None
    if not isinstance(after, str):
        raise InvalidInput("after must be a position string from Change.position, '' or None")
    if after == "":
        return (None, 0)
    match = _POSITION.fullmatch(after)
    if match is None:
        raise InvalidInput(f"after={after!r} is not a position yielded by store.changes()")
    return match.group(1), int(match.group(2))


def _check_kinds(kinds: object) -> tuple[ChangeKind, ...] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str) or not isinstance(kinds, Iterable):
        raise InvalidInput("kinds must be a list of ChangeKind values (or None for all)")
    chosen: list[ChangeKind] = []
    for kind in kinds:
        try:
            chosen.append(ChangeKind(kind))
        except ValueError:
            names = ", ".join(k.value for k in ChangeKind)
            raise InvalidInput(f"unknown change kind {kind!r}; one of: {names}") from None
    if not chosen:
        raise InvalidInput("kinds must name at least one kind (None: all)")
    return tuple(dict.fromkeys(chosen))


class _Feed:
    """An iteration's position in the tenant's log, and the changes read past it."""

    def __init__(
        self,
        user: TenantId,
        start: tuple[str | None, int] | None,
        kinds: tuple[ChangeKind, ...] | None,
        clock: Callable[[], datetime],
    ) -> None:
        self.user = user
        self.kinds = kinds
        self.fresh = start is None  # after=None: start at the log's end, first read
        self.epoch, self.seq = start if start is not None else (None, 0)
        self.skip_pruned = start == (None, 0)  # after='': oldest retained, no warning
        self.clock = clock

    def _notice(self, kind: ChangeKind, position: str, public: str | None) -> Change:
        """A change the log reports about itself (forget, reset, pruning): no key, now."""
        return Change(kind=kind, key=None, at=self.clock(), position=position, user_id=public)

    async def read(self, session: AsyncSession, head: ChangeHead | None) -> list[Change] | None:
        public = public_user_id(self.user)
        if self.fresh:
            self.fresh = False
            if head is not None:
                self.epoch, self.seq = head.epoch, head.last_seq
            return None
        out: list[Change] = []
        if self.epoch is not None and (head is None or head.epoch != self.epoch):
            # The epoch of our position is gone: the tenant was forgotten (and
            # perhaps restored by an import, which draws a new epoch) since.
            self.epoch, self.seq = (head.epoch if head is not None else None), 0
            position = f"{self.epoch}:0" if self.epoch is not None else ""
            out.append(self._notice(ChangeKind.FORGET, position, public))
        if head is None:
            return out or None
        self.epoch = head.epoch
        if self.seq > head.last_seq:
            # A number this epoch has not handed out: resuming past it would skip
            # every change until the log caught up, so the caller is told instead.
            self.seq = head.last_seq
            out.append(
                self._notice(ChangeKind.CHANGES_RESET, f"{head.epoch}:{head.last_seq}", public)
            )
        if self.seq < head.pruned_through:
            if not self.skip_pruned:
                out.append(
                    self._notice(
                        ChangeKind.CHANGES_PRUNED, f"{head.epoch}:{head.pruned_through}", public
                    )
                )
            self.seq = head.pruned_through
        self.skip_pruned = False
        rows = await ChangeLogRepository(session=session).read(
            self.user, after=self.seq, kinds=self.kinds, limit=_BATCH
        )
        for row in rows:
            out.append(
                Change(
                    kind=row.kind,
                    key=row.key,
                    at=row.created_at,
                    position=f"{head.epoch}:{row.seq}",
                    user_id=public,
                    slot_index=row.slot_index,
                )
            )
        # Every number up to head.last_seq was committed before the rows were read
        # (numbers are claimed in commit order), so a filtered read that came back
        # short has seen all of them.
        self.seq = max([self.seq, *(r.seq for r in rows)])
        if len(rows) < _BATCH:
            self.seq = max(self.seq, head.last_seq)
        return out or None


class ChangeService(Service):
    """The change feed of one store."""

    async def change_position(self, *, user_id: str | None = None) -> str:
        """The tenant's feed as of now, as an ``after=`` position of :meth:`changes`.

        ``changes(after=None)`` fixes its start on its first step; a caller that must
        be listening before it answers someone (the MCP server confirming a
        subscription) reads this first: ``changes(after=position)`` then yields
        every change committed after this call.
        """
        return await change_position(self.db, user_id)

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
        those kinds (``FORGET``, ``CHANGES_PRUNED`` and ``CHANGES_RESET`` are always
        reported).
        Stop by leaving the ``async for`` (or ``aclose()``).
        """
        user = storage_user_id(user_id)
        chosen = _check_kinds(kinds)
        feed = _Feed(user, parse_position(after), chosen, self.db.now)
        async with watching(self.db, user, None, what="changes") as watch:
            while True:
                # No deadline: until() returns only when there is something to yield.
                batch = await watch.until(feed.read) or []
                if batch:
                    delivered(batch[-1].at, self.db.now)
                for change in batch:
                    yield change
