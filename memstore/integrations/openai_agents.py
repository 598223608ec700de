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

import asyncio
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from memstore.core.validation import check_identifier, check_json
from memstore.errors import InvalidInput, LimitExceeded, TenantRequired, WrongThread
from memstore.types import Slot

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings

    from memstore.store import MemoryStore

__all__ = ["InvalidSessionInput", "MemstoreSession"]

_WRITER = "openai-agents"
T = TypeVar("T")


class InvalidSessionInput(InvalidInput, TypeError):
    """Session settings or items the session refuses; nothing was written.

    Also a ``TypeError``, which the SDK's own sessions raise for the same input
    (unknown settings, an item that is not JSON).
    """


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
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        check_identifier("session_id", session_id)
        if not isinstance(thread_prefix, str):
            raise InvalidInput("thread_prefix must be a string")
        self.session_id = session_id
        self.session_settings = _settings(session_settings)
        self._store = store
        if user_id is None:
            raise TenantRequired("MemstoreSession")
        self._tenant = store.tenant(user_id)
        self._thread = check_identifier("thread id", thread_prefix + session_id)

    async def _on_store_loop(self, call: Coroutine[Any, Any, T]) -> T:
        """Run ``call`` on the loop the store was opened on.

        The store's connections belong to that loop; the SDK may call from
        another one (``Runner.run_sync`` runs its own loop in a thread), where
        using them directly would break the driver (asyncpg crashes the process).
        """
        loop = self._store.loop
        if loop is None or loop is asyncio.get_running_loop():
            return await call
        if loop.is_closed() or not loop.is_running():
            call.close()
            raise WrongThread(
                "this session's MemoryStore was opened on another event loop, which is "
                "not running; open the store on the loop that runs the agent, or keep "
                "its loop running (e.g. SyncMemoryStore) while the agent runs"
            )
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, loop))

    @property
    def user_id(self) -> str:
        return self._tenant.user_id

    @property
    def thread_id(self) -> str:
        """The memstore thread holding this conversation's log."""
        return self._thread

    def _limit(self, limit: int | None) -> int | None:
        if limit is None:
            limit = _settings(self.session_settings).limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInput(f"limit must be an integer or None, got {limit!r}")
        return limit

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (all if None) in chronological order; [] if limit <= 0."""
        return await self._on_store_loop(self._get_items(limit))

    async def _get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        limit = self._limit(limit)
        if limit is not None and limit <= 0:
            return []
        slots = await self._tenant.threads.get_thread(self._thread)
        items = _replay(slots)
        return items if limit is None else items[-limit:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` atomically as one contiguous run; [] writes nothing."""
        return await self._on_store_loop(self._add_items(items))

    async def _add_items(self, items: list[TResponseInputItem]) -> None:
        if not isinstance(items, list):
            raise InvalidSessionInput(f"items must be a list, got {type(items).__name__}")
        for n, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InvalidSessionInput(f"items[{n}] must be a dict, got {type(item).__name__}")
        if not items:
            return
        try:
            entry = check_json("items", {"add": [dict(item) for item in items]})
        except InvalidInput as exc:
            raise InvalidSessionInput(str(exc)) from exc
        await self._tenant.threads.append(
            self._thread, entry, from_id=_WRITER, to_id=self.session_id
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the most recent item; None (nothing written) if there is none."""
        return await self._on_store_loop(self._pop_item())

    async def _pop_item(self) -> TResponseInputItem | None:
        popped: list[TResponseInputItem] = []

        def tombstone(log: list[Slot]) -> dict[str, int] | None:
            # The log before the tombstone, exactly: no append lands in between.
            items = _replay(log)
            if not items:
                return None
            popped.append(items[-1])
            return {"pop": 1}

        try:
            await self._tenant.threads.append_from_log(
                self._thread, tombstone, from_id=_WRITER, to_id=self.session_id
            )
        except LimitExceeded as exc:
            raise LimitExceeded(
                f"session {self.session_id!r} holds {self._store.threads.max_slots_per_thread} "
                "log entries (max_slots_per_thread); clear_session() or raise the limit"
            ) from exc
        return popped[-1] if popped else None

    async def clear_session(self) -> None:
        """Delete every item of this session (the thread and its slots)."""
        return await self._on_store_loop(self._clear_session())

    async def _clear_session(self) -> None:
        await self._tenant.threads.delete_thread(self._thread)


def _settings(value: object) -> SessionSettings:
    """``value`` as the SDK's ``SessionSettings``, coerced and checked as the SDK does.

    A dict is converted (unknown keys refused), None gives the defaults, so
    ``session_settings`` is always a ``SessionSettings`` like the SDK's sessions'.
    """
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings

    if value is None:
        return SessionSettings()
    if not isinstance(value, SessionSettings | Mapping):
        raise InvalidSessionInput(
            f"session_settings must be a SessionSettings or a dict, got {type(value).__name__}"
        )
    try:
        return coerce_session_settings(value if isinstance(value, SessionSettings) else dict(value))
    except (TypeError, ValueError) as exc:  # unknown keys; pydantic's checks
        raise InvalidSessionInput(str(exc)) from exc
