"""An OpenAI Agents SDK ``Session`` on memstore threads (extra ``memstore[openai-agents]``).

The conversation is a memstore thread, an append-only log with atomic slot
numbering, so any number of processes can share one session safely:

- ``add_items(items)`` appends ONE slot ``{"add": [...items]}``: a call's items
  are stored all or nothing, contiguous and in order, whatever other processes
  append at the same time.
- ``pop_item()`` cannot change a slot (slots are immutable, by trigger), so it
  appends a tombstone ``{"pop": 1}``. In the same transaction it claims its
  slot index (which locks the thread on Postgres; SQLite write transactions are
  serial) and replays the log before it, so two concurrent pops return two
  different items, and a pop of an empty session writes nothing.
- ``clear_session()`` deletes the thread (the supported delete path), so a
  cleared conversation's content is really gone, not merely hidden.
- ``get_items(limit)`` replays the log: the latest ``limit`` items, oldest first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidInput, LimitExceeded
from memstore.repositories.threads import ThreadRepository
from memstore.slots import Slot, SlotMetadata
from memstore.tenancy import public_user_id, storage_user_id
from memstore.validation import check_identifier, check_json

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings

    from memstore.store import MemoryStore

__all__ = ["MemstoreSession"]

_WRITER = "openai-agents"


class _NothingToPop(Exception):
    """Rolls back the claimed tombstone index of a pop on an empty session."""


def _replay(slots: list[Slot]) -> list[Any]:
    items: list[Any] = []
    for slot in slots:
        entry = slot.payload
        if not isinstance(entry, Mapping):
            continue  # not written by this session (the thread id is shared API)
        if "add" in entry and isinstance(entry["add"], list):
            items.extend(entry["add"])
        elif "pop" in entry and items:
            items.pop()
    return items


class MemstoreSession:
    """The Agents SDK ``Session`` protocol on a memstore thread of one tenant.

    ``session_id`` names the conversation; it is stored as the thread
    ``thread_prefix + session_id`` of ``user_id`` (the memstore tenant), so
    sessions never collide with other uses of threads, nor across tenants.
    """

    def __init__(
        self,
        session_id: str,
        store: MemoryStore,
        *,
        user_id: str | None = None,
        thread_prefix: str = "openai-agents:",
        session_settings: SessionSettings | None = None,
    ) -> None:
        check_identifier("session_id", session_id)
        if not isinstance(thread_prefix, str):
            raise InvalidInput("thread_prefix must be a string")
        self.session_id = session_id
        self.session_settings = session_settings
        self._store = store
        self._user = storage_user_id(user_id)
        self._thread = check_identifier("thread id", thread_prefix + session_id)

    @property
    def user_id(self) -> str | None:
        return public_user_id(self._user)

    @property
    def thread_id(self) -> str:
        """The memstore thread holding this conversation's log."""
        return self._thread

    def _limit(self, limit: int | None) -> int | None:
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInput(f"limit must be an integer or None, got {limit!r}")
        return limit

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (all if None) in chronological order; [] if limit <= 0."""
        limit = self._limit(limit)
        if limit is not None and limit <= 0:
            return []
        slots = await self._store.threads.get_thread(self._thread, user_id=self.user_id)
        items = _replay(slots)
        return items if limit is None else items[-limit:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` atomically as one contiguous run; [] writes nothing."""
        if not isinstance(items, list):
            raise InvalidInput(f"items must be a list, got {type(items).__name__}")
        for n, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InvalidInput(f"items[{n}] must be a dict, got {type(item).__name__}")
        if not items:
            return
        entry = check_json("items", {"add": [dict(item) for item in items]})
        await self._store.threads.append(
            self._thread,
            entry,
            from_id=_WRITER,
            to_id=self.session_id,
            user_id=self.user_id,
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the most recent item; None (nothing written) if there is none."""
        threads = self._store.threads
        now = self._store.now()
        try:
            async with self._store.db.write(self._user) as session:
                repo = ThreadRepository(session=session)
                # Claim first: from here on no one else can append to this thread
                # until we commit, so the replay below is exactly the log before us.
                index = await repo.claim_index(
                    self._user, self._thread, now=now, max_slots=threads.max_slots_per_thread
                )
                if index is None:
                    raise LimitExceeded(
                        f"session {self.session_id!r} holds {threads.max_slots_per_thread} "
                        "log entries (max_slots_per_thread); clear_session() or raise the limit"
                    )
                items = _replay(await repo.slots(self._user, self._thread, stop=index))
                if not items:
                    raise _NothingToPop
                metadata = SlotMetadata(
                    thread_id=self._thread,
                    from_id=_WRITER,
                    to_id=self.session_id,
                    slot_index=index,
                    timestamp=now,
                    payload_type="dict",
                    user_id=self.user_id,
                )
                await repo.add_slot(self._user, metadata, {"pop": 1})
        except _NothingToPop:
            return None
        popped: TResponseInputItem = items[-1]
        return popped

    async def clear_session(self) -> None:
        """Delete every item of this session (the thread and its slots)."""
        await self._store.threads.delete_thread(self._thread, user_id=self.user_id)
