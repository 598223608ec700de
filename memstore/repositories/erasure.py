"""Tenant erasure lock: forget(user_id=X) against work on X that started before it.

Some writers derive rows from a tenant's existing data and write them later
than they read it: a consolidation batch writes facts from episodes it read
before extracting, an access-count flush writes counters of items recalled
earlier. Had forget erased X in between, such a write would bring rows of X
back. So:

* forget (of the whole tenant, or of some of its episodes) takes the tenant's
  erasure lock **exclusively** (:func:`lock_for_erasure`) before deleting
  anything;
* a derived writer takes it **shared** (:func:`guard_against_erasure`) before
  it reads what it depends on in its writing transaction, then writes only for
  sources that still exist.

Either the writer commits first (forget then waits and erases its rows too),
or forget commits first (the writer's later statements see the tenant gone).
Shared holders never wait for each other.

The lock is the dialect's (:meth:`memstore.dialects.Dialect.lock`): on
PostgreSQL a transaction-level advisory lock, released at commit or rollback
(or when a killed client's connection drops). On SQLite every write
transaction starts with ``BEGIN IMMEDIATE`` and holds the database's single
write lock, so writers are already serial and each one sees everything
committed before it: the lock takes nothing there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncSession

from memstore.core.tenancy import TenantId
from memstore.dialects import Lock, dialect_for

__all__ = ["guard_against_erasure", "lock_for_erasure"]

# First key of the two-int advisory lock space ("era"): distinct from the
# consolidation tenant locks and from the single-bigint fact locks.
_ERASURE_CLASS = 0x657261


def _key(user_id: TenantId) -> int:
    digest = hashlib.blake2b(user_id.encode(), digest_size=4, person=b"erasure").digest()
    return int.from_bytes(digest, "big", signed=True)


async def lock_for_erasure(session: AsyncSession, user_id: TenantId) -> None:
    """Wait until no derived writer of ``user_id`` is in flight; block new ones until commit."""
    await dialect_for(session).lock(session, Lock(_key(user_id), space=_ERASURE_CLASS))


async def guard_against_erasure(session: AsyncSession, user_ids: Iterable[TenantId]) -> None:
    """Keep ``user_ids`` from being erased until this transaction ends (waits for one running).

    Call it before reading the sources of a derived write, in the transaction
    that writes. One statement for all; keys are taken in ascending order (the
    order of the array) so two guards never wait for each other in a cycle.
    """
    keys = tuple(sorted({_key(u) for u in user_ids}))
    if keys:
        await dialect_for(session).lock(session, Lock(keys, space=_ERASURE_CLASS, shared=True))
