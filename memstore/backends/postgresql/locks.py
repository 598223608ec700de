"""Postgres: transaction-scoped advisory locks, the way its concurrent writers serialise.

A lock is held until the transaction commits or rolls back (or a killed client's
connection drops). Its key is one bigint, or two ints when the lock's ``space``
names the first: the two key spaces never collide.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.dialects.base import Lock

__all__ = ["advisory_lock"]


async def advisory_lock(session: AsyncSession, lock: Lock, *, wait: bool) -> bool:
    """Take ``lock`` (each of a tuple of keys in its order, in one statement)."""
    function = f"pg_{'' if wait else 'try_'}advisory_xact_lock{'_shared' if lock.shared else ''}"
    params: dict[str, object] = {} if lock.space is None else {"c": lock.space}
    if isinstance(lock.key, int):
        params["k"] = lock.key
        statement = text(f"SELECT {function}({':k' if lock.space is None else ':c, :k'})")
        if not wait:
            return bool(await session.scalar(statement, params))
        await session.execute(statement, params)
        return True
    if not wait:
        raise ValueError("only a single advisory lock can be tried without waiting")
    params["keys"] = list(lock.key)
    args, kind = ("k", "bigint") if lock.space is None else (":c, k", "integer")
    await session.execute(
        text(f"SELECT {function}({args}) FROM unnest(CAST(:keys AS {kind}[])) AS k"), params
    )
    return True
