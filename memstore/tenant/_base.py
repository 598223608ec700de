"""The hand-written part of a tenant-bound handle: construction and the calls whose
tenant travels inside their argument (an ``Episode``'s or a ``Fact``'s ``user_id``).

``memstore.tenant._generated`` adds every other tenant-scoped method of the store and
of its thread buffer, without their ``user_id`` parameter (scripts/gen_tenant.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from memstore.core.tenancy import storage_user_id
from memstore.errors import InvalidInput
from memstore.services.threads import ThreadBuffer
from memstore.types import AssertOutcome, Episode, Fact

if TYPE_CHECKING:
    from memstore.store import MemoryStore

__all__ = ["TenantBase", "TenantThreadsBase"]

_Row = TypeVar("_Row", Episode, Fact)


class TenantThreadsBase:
    """``threads`` of a tenant handle: the store's thread buffer, for one tenant."""

    def __init__(self, threads: ThreadBuffer, user_id: str) -> None:
        storage_user_id(user_id, operation="tenant")
        self._target = threads
        self._user_id = user_id

    @property
    def user_id(self) -> str:
        """The tenant every call of this view reads and writes."""
        return self._user_id


class TenantBase:
    """One tenant of a store; every call reads and writes that tenant only."""

    def __init__(self, store: MemoryStore, user_id: str) -> None:
        # Refused here, once: a handle always names a valid tenant.
        storage_user_id(user_id, operation="tenant")
        self._target = store
        self._user_id = user_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} user_id={self._user_id!r}>"

    @property
    def user_id(self) -> str:
        """The tenant every call of this handle reads and writes."""
        return self._user_id

    def _own(self, row: _Row) -> _Row:
        """``row`` with this tenant's ``user_id``: filled when missing, refused when another."""
        if not isinstance(row, Episode | Fact):
            return row  # the store refuses it with its own message
        if row.user_id is None:
            return dataclasses.replace(row, user_id=self._user_id)
        if row.user_id != self._user_id:
            kind = type(row).__name__
            raise InvalidInput(
                f"{kind.lower()}.user_id is {row.user_id!r} but this handle is tenant "
                f"{self._user_id!r}; leave {kind}(user_id=...) unset, or use "
                f"store.tenant({row.user_id!r})"
            )
        return row

    async def remember(self, episode: Episode) -> str:
        """Store one agent turn of this tenant; returns its id.

        ``episode.user_id`` may be left unset (it is this tenant); another tenant's
        is refused (:class:`InvalidInput`), and nothing is written.
        """
        return await self._target.remember(self._own(episode))

    async def remember_many(self, episodes: Sequence[Episode]) -> list[str]:
        """Store many turns of this tenant in one transaction (all or nothing); returns their ids.

        As :meth:`remember` for each episode's ``user_id``.
        """
        return await self._target.remember_many([self._own(e) for e in episodes])

    async def assert_fact(self, fact: Fact) -> AssertOutcome:
        """Like :meth:`add_fact`, but also says whether it added, reinforced or superseded."""
        return await self._target.assert_fact(self._own(fact))

    async def add_fact(self, fact: Fact) -> str:
        """Record a fact of this tenant; returns its logical id (stable across its versions).

        ``fact.user_id`` may be left unset (it is this tenant); another tenant's is
        refused (:class:`InvalidInput`), and nothing is written.
        """
        return await self._target.add_fact(self._own(fact))
