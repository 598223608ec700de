"""``threads.wait`` and ``threads.follow``: the next slots of a thread, as they are committed.

A service of its own that :class:`~memstore.services.threads.ThreadBuffer` forwards
``wait`` and ``follow`` to, so the buffer's module stays about appending and
reading. Both sleep on the store's change signal between reads (see
memstore.services.watch): any process's committed append wakes them, a
rolled-back one never does, and what they return is read back from the
database, filtered by tenant and thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from memstore.core.tenancy import TenantId, storage_user_id
from memstore.core.validation import check_identifier
from memstore.errors import InvalidInput
from memstore.repositories.threads import SlotReads
from memstore.services.base import Service
from memstore.services.watch import check_timeout, watching
from memstore.telemetry import delivered
from memstore.types import Slot

if TYPE_CHECKING:
    from memstore.db.unit import Reader

__all__ = ["MAX_SLOT_INDEX", "ThreadWatch"]

# Slots per read of follow(); wait() returns every slot after ``after``.
_FOLLOW_BATCH = 256
# Slot indexes are 32-bit on both backends (``slot_index`` and ``next_slot_index``
# are INTEGER columns, int4 on Postgres): the last index a thread can hand out
# is one below the largest counter value.
MAX_SLOT_INDEX = 2**31 - 2


def _check_after(after: object) -> int | None:
    if after is None:
        return None
    if isinstance(after, bool) or not isinstance(after, int) or not -1 <= after <= MAX_SLOT_INDEX:
        raise InvalidInput(
            f"after must be a slot index between -1 and {MAX_SLOT_INDEX} "
            "(or None: after the last slot)"
        )
    return after


class _Cursor:
    """Where a waiter of one thread is: the last index it has (None: not looked yet)."""

    def __init__(self, user: TenantId, thread_id: str, after: int | None, limit: int | None):
        self.user, self.thread_id, self.after, self.limit = user, thread_id, after, limit

    async def find(self, reader: Reader) -> list[Slot] | None:
        reads = SlotReads(reader=reader)
        if self.after is None:
            # "After the current last slot": the first read fixes it. The waiter is
            # registered already, so an append committed after this read wakes it.
            self.after = await reads.count(self.user, self.thread_id) - 1
            return None
        slots = await reads.after(self.user, self.thread_id, start=self.after + 1, limit=self.limit)
        if not slots:
            return None
        self.after = slots[-1].index
        return slots


class ThreadWatch(Service):
    """Waiting for a thread's next slots (``store.threads.wait`` and ``follow``)."""

    async def wait(
        self,
        thread_id: str,
        *,
        after: int | None = None,
        # A parameter, not asyncio.timeout(): the sync facade's blocking wait needs it too.
        timeout: float | None = None,  # noqa: ASYNC109
        user_id: str | None = None,
    ) -> list[Slot]:
        """The thread's slots with index > ``after``, as soon as one is committed by any process.

        Returns at once when there are some already; otherwise sleeps until an
        append commits (in this or any other process on the same database) and
        returns the new slots, or ``[]`` after ``timeout`` seconds (None: no
        limit; 0: just look). ``after=None`` means after the thread's current
        last slot (wait for the next append); ``after=-1`` returns the whole
        thread. The thread need not exist yet.
        """
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        cursor = _Cursor(user, thread_id, _check_after(after), None)
        seconds = check_timeout(timeout)
        async with watching(self.db, user, seconds, what="threads.wait") as watch:
            found = await watch.until_found(cursor.find) or []
        if found:
            delivered(found[-1].timestamp, self.db.now)
        return found

    async def follow(
        self,
        thread_id: str,
        *,
        after: int | None = None,
        user_id: str | None = None,
    ) -> AsyncIterator[Slot]:
        """Yield the thread's slots with index > ``after`` in order, then each new one
        as it is committed, forever (``after`` as in :meth:`wait`)."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        cursor = _Cursor(user, thread_id, _check_after(after), _FOLLOW_BATCH)
        async with watching(self.db, user, None, what="threads.follow") as watch:
            while True:
                # No deadline: until() returns only when there are slots.
                found = await watch.until_found(cursor.find) or []
                if found:
                    delivered(found[-1].timestamp, self.db.now)
                for slot in found:
                    yield slot
