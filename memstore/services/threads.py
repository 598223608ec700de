"""``store.threads``: append-only thread context buffers shared through the database.

Every process that opens a store on the same database sees the same threads.

Atomic slot numbering: ``append`` reserves its index with one statement,
``INSERT INTO threads ... ON CONFLICT (user_id, thread_id) DO UPDATE SET
next_slot_index = next_slot_index + 1 ... RETURNING next_slot_index``, and
inserts the slot in the same transaction.

- Postgres: the upsert is atomic (it either inserts or locks and updates the
  existing row, never fails with a duplicate for concurrent creators). The
  row lock is held until commit, so a second appender waits, then reads the
  incremented value; if the first rolls back, the counter reverts with the
  lock and the second gets the same index the first gave up: no gap.
- SQLite: every write transaction starts with BEGIN IMMEDIATE (see
  memstore.db.connections), so only one appender in any process is between claim
  and commit; the others wait (busy_timeout) and then read the committed value.

In both, the primary key (user_id, thread_id, slot_index) of ``slots`` is the
backstop: a duplicate index could not be committed even if the above failed.

``append`` makes the claim, the slot, the tenant's change number and its change row
one call to the database where the backend can (:meth:`Dialect.append_slot`: one
statement on Postgres, one hand-over to the connection's thread on SQLite), with
the same statements' semantics; ``append_from_log``, which reads between claim and
insert, and databases that cannot (Citus) run them one by one in a transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from memstore.core.forwarding import forward, forwards_owned
from memstore.core.tenancy import public_user_id, storage_user_id
from memstore.core.validation import check_identifier, check_json, check_limit, check_text
from memstore.db.signal import hint_of
from memstore.db.unit import Database
from memstore.dialects import SlotAppend
from memstore.errors import InvalidInput, LimitExceeded, NotFound
from memstore.repositories.changes import ChangeEntry, ChangeLogRepository
from memstore.repositories.threads import ThreadRepository
from memstore.services.limits import check_positive_seconds
from memstore.services.thread_watch import ThreadWatch
from memstore.telemetry import traced_operations
from memstore.types import ChangeKind, Slot, ThreadInfo, new_id

__all__ = ["DEFAULT_MAX_SLOTS_PER_THREAD", "DEFAULT_MAX_THREADS", "MAX_LIMIT", "ThreadBuffer"]

DEFAULT_MAX_SLOTS_PER_THREAD = 10_000
DEFAULT_MAX_THREADS = 1_000
MAX_LIMIT = 100_000_000
_ITER_BATCH = 256


class _NothingToAppend(Exception):
    """Rolls back the index claimed by an append_from_log that writes nothing."""


def _encode_payload(payload: Any) -> tuple[str, Any]:
    """(type name, JSON value). Dataclass instances become dicts."""
    type_name = type(payload).__name__
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        try:
            payload = dataclasses.asdict(payload)
        except (TypeError, RecursionError) as exc:
            raise InvalidInput(f"payload is not JSON-serialisable: {exc}") from exc
    return type_name, check_json("payload", payload)


@traced_operations("memstore.threads")
@forwards_owned
class ThreadBuffer:
    """Thread-scoped, append-only message slots; every method takes ``user_id``.

    Limits: ``max_slots_per_thread`` is enforced on append; ``max_threads``
    (per tenant, newest kept) and ``idle_ttl_seconds`` are applied by the store's
    ``gc`` (:mod:`memstore.services.gc`).
    """

    def __init__(
        self,
        db: Database,
        *,
        max_slots_per_thread: int = DEFAULT_MAX_SLOTS_PER_THREAD,
        max_threads: int = DEFAULT_MAX_THREADS,
        idle_ttl_seconds: float | None = None,
    ) -> None:
        self._db = db
        self._watch = ThreadWatch(db=db)
        # Appends run as one call to the database until it says it cannot.
        self._in_one_call = True
        self.max_slots_per_thread = check_limit(
            "max_slots_per_thread", max_slots_per_thread, maximum=MAX_LIMIT
        )
        self.max_threads = check_limit("max_threads", max_threads, maximum=MAX_LIMIT)
        self.idle_ttl_seconds = (
            None
            if idle_ttl_seconds is None
            else check_positive_seconds("thread_idle_ttl_seconds", idle_ttl_seconds)
        )

    # ---- writing ---------------------------------------------------------------

    async def append(
        self,
        thread_id: str,
        payload: Any,
        *,
        from_id: str,
        to_id: str,
        user_id: str | None = None,
        own_name: str | None = None,
        is_self_call: bool = False,
        usage_instructions: str = "",
        todo_nudge: str = "",
    ) -> Slot:
        """Append ``payload`` as the thread's next slot (creating the thread) and return it.

        Raises :class:`LimitExceeded` (nothing written) when the thread already
        holds ``max_slots_per_thread`` slots.
        """
        if own_name is not None:
            check_identifier("own_name", own_name)
        if not isinstance(is_self_call, bool):
            raise InvalidInput("is_self_call must be a bool")
        check_text("usage_instructions", usage_instructions, allow_empty=True)
        check_text("todo_nudge", todo_nudge, allow_empty=True)
        encoded = _encode_payload(payload)
        metadata: dict[str, Any] = {
            "from_id": from_id,
            "to_id": to_id,
            "own_name": own_name,
            "is_self_call": is_self_call,
            "usage_instructions": usage_instructions,
            "todo_nudge": todo_nudge,
        }
        if self._in_one_call:
            done = await self._append_in_one_call(user_id, thread_id, encoded, **metadata)
            if done is not None:
                return done
            self._in_one_call = False  # this database cannot (Citus): from now on, below
        slot = await self._append(
            user_id, thread_id, lambda _log: encoded, read_log=False, **metadata
        )
        assert slot is not None  # the payload is never None
        return slot

    async def append_from_log(
        self,
        thread_id: str,
        decide: Callable[[list[Slot]], Any],
        *,
        from_id: str,
        to_id: str,
        user_id: str | None = None,
    ) -> Slot | None:
        """Append what ``decide`` makes of the thread's slots (None: nothing), atomically:
        the index is claimed first, so ``decide`` sees exactly the log before the slot."""

        def encoded(log: list[Slot]) -> tuple[str, Any] | None:
            payload = decide(log)
            return None if payload is None else _encode_payload(payload)

        return await self._append(
            user_id, thread_id, encoded, read_log=True, from_id=from_id, to_id=to_id
        )

    async def _append_in_one_call(
        self, user_id: str | None, thread_id: str, encoded: tuple[str, Any], **metadata: Any
    ) -> Slot | None:
        """``append`` as one call to the database (Dialect.append_slot); None: it cannot."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        check_identifier("from_id", metadata["from_id"])
        check_identifier("to_id", metadata["to_id"])
        payload_type, value = encoded
        check_identifier("payload type name", payload_type)
        now = self._db.now()
        request = SlotAppend(
            user_id=user,
            thread_id=thread_id,
            payload_type=payload_type,
            payload=value,
            now=now,
            max_slots=self.max_slots_per_thread,
            epoch=new_id(),
            **metadata,
        )
        async with self._db.single_write(user) as reader:
            done = await self._db.backend.append_slot(reader, request)
            if done is None:
                return None
            if done.index is None or done.epoch is None:
                limit = self.max_slots_per_thread
                raise LimitExceeded(
                    f"thread {thread_id!r} already holds {limit} slots (max_slots_per_thread)"
                )
        self._db.committed({hint_of(done.epoch)})
        return Slot(
            thread_id=thread_id,
            slot_index=done.index,
            timestamp=now,
            payload_type=payload_type,
            user_id=public_user_id(user),
            payload=value,
            **metadata,
        )

    async def _append(
        self,
        user_id: str | None,
        thread_id: str,
        encoded: Callable[[list[Slot]], tuple[str, Any] | None],
        *,
        read_log: bool,
        **metadata: Any,
    ) -> Slot | None:
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        check_identifier("from_id", metadata["from_id"])
        check_identifier("to_id", metadata["to_id"])
        now = self._db.now()
        try:
            async with self._db.write(user) as session:
                repo = ThreadRepository(session=session)
                limit = self.max_slots_per_thread
                index = await repo.claim_index(user, thread_id, now=now, max_slots=limit)
                if index is None:
                    raise LimitExceeded(
                        f"thread {thread_id!r} already holds {limit} slots (max_slots_per_thread)"
                    )
                log = await repo.slots(user, thread_id, stop=index) if read_log else []
                payload = encoded(log)
                if payload is None:
                    raise _NothingToAppend  # rolls back the claimed index
                payload_type, value = payload
                check_identifier("payload type name", payload_type)
                slot = Slot(
                    thread_id=thread_id,
                    slot_index=index,
                    timestamp=now,
                    payload_type=payload_type,
                    user_id=public_user_id(user),
                    payload=value,
                    **metadata,
                )
                await repo.add_slot(user, slot)
                appended = ChangeEntry(ChangeKind.THREAD_APPENDED, thread_id, index)
                await ChangeLogRepository(session=session).record(user, [appended], now=now)
        except _NothingToAppend:
            return None
        return slot

    async def delete_thread(self, thread_id: str, *, user_id: str | None = None) -> bool:
        """Delete a thread and all its slots; False if it did not exist."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        async with self._db.write(user) as session:
            removed = await ThreadRepository(session=session).delete(user, [thread_id])
            gone = [ChangeEntry(ChangeKind.THREAD_DELETED, t) for t in removed]
            await ChangeLogRepository(session=session).record(user, gone, now=self._db.now())
        return bool(removed)

    # ---- reading ---------------------------------------------------------------

    async def _slots(self, user_id: str | None, thread_id: str, **where: Any) -> list[Slot]:
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        async with self._db.read(user) as session:
            return await ThreadRepository(session=session).slots(user, thread_id, **where)

    async def get_thread(self, thread_id: str, *, user_id: str | None = None) -> list[Slot]:
        """Every slot of the thread in slot order ([] if there is no such thread)."""
        return await self._slots(user_id, thread_id)

    async def get_slice(
        self,
        thread_id: str,
        start: int = 0,
        end: int | None = None,
        *,
        user_id: str | None = None,
    ) -> list[Slot]:
        """Slots ``[start:end]`` with Python slice semantics (negative counts from the end)."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        for name, bound in (("start", start), ("end", end)):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
                raise InvalidInput(f"{name} must be an integer or None")
        async with self._db.read(user) as session:
            repo = ThreadRepository(session=session)
            info = await repo.info(user, thread_id)
            if info is None:
                return []
            # No gaps: slot i exists for every i < slot_count, so a slice of
            # range(slot_count) is exactly the index interval to fetch.
            window = range(info.slot_count)[start:end]
            if not window:
                return []
            return await repo.slots(user, thread_id, start=window.start, stop=window.stop)

    async def get_slot(self, thread_id: str, index: int, *, user_id: str | None = None) -> Slot:
        """The slot at ``index`` (negative counts from the end); NotFound if out of range."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidInput("index must be an integer")
        found = await self.get_slice(thread_id, index, (index + 1) or None, user_id=user_id)
        if not found:
            raise NotFound(f"thread {thread_id!r} has no slot {index}")
        return found[0]

    async def get_by_type(
        self, thread_id: str, payload_type: str, *, user_id: str | None = None
    ) -> list[Slot]:
        """The thread's slots whose ``payload_type`` is ``payload_type``, oldest first."""
        check_identifier("payload_type", payload_type)
        return await self._slots(user_id, thread_id, payload_type=payload_type)

    async def get_from(
        self, thread_id: str, from_id: str, *, user_id: str | None = None
    ) -> list[Slot]:
        """The thread's slots appended with ``from_id`` (their sender), oldest first."""
        check_identifier("from_id", from_id)
        return await self._slots(user_id, thread_id, from_id=from_id)

    async def iterate(
        self, thread_id: str, *, user_id: str | None = None, batch_size: int = _ITER_BATCH
    ) -> AsyncIterator[Slot]:
        """Stream the thread in slot order, a batch per short read transaction."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        check_limit("batch_size", batch_size)
        start = 0
        while True:
            async with self._db.read(user) as session:
                batch = await ThreadRepository(session=session).slots(
                    user, thread_id, start=start, limit=batch_size
                )
            for slot in batch:
                yield slot
            if len(batch) < batch_size:
                return
            start = batch[-1].index + 1

    async def thread_exists(self, thread_id: str, *, user_id: str | None = None) -> bool:
        """Whether the tenant has a thread ``thread_id``."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        async with self._db.read(user) as session:
            return await ThreadRepository(session=session).exists(user, thread_id)

    async def length(self, thread_id: str, *, user_id: str | None = None) -> int:
        """Number of slots in the thread (0 if there is no such thread)."""
        info = await self.thread_info(thread_id, user_id=user_id)
        return info.slot_count if info is not None else 0

    async def thread_info(self, thread_id: str, *, user_id: str | None = None) -> ThreadInfo | None:
        """The thread's length and times (None if the tenant has no such thread)."""
        user = storage_user_id(user_id)
        check_identifier("thread_id", thread_id)
        async with self._db.read(user) as session:
            return await ThreadRepository(session=session).info(user, thread_id)

    async def list_threads(self, *, user_id: str | None = None) -> list[ThreadInfo]:
        """The tenant's threads, oldest first."""
        user = storage_user_id(user_id)
        async with self._db.read(user) as session:
            return await ThreadRepository(session=session).list_threads(user)

    async def stats(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Counts for one tenant: its threads, their slots and the buffer's limits."""
        user = storage_user_id(user_id)
        async with self._db.read(user) as session:
            repo = ThreadRepository(session=session)
            thread_count, total_slots = await repo.totals(user)
            threads = [t.thread_id for t in await repo.list_threads(user)]
        return {
            "thread_count": thread_count,
            "total_slots": total_slots,
            "max_threads": self.max_threads,
            "max_slots_per_thread": self.max_slots_per_thread,
            "idle_ttl_seconds": self.idle_ttl_seconds,
            "threads": threads,
            "backend": self._db.dialect,
        }

    # Waiting for the next slots: the watch's own methods, signatures written once.
    wait = forward("_watch", ThreadWatch.wait)
    follow = forward("_watch", ThreadWatch.follow)
