"""Postgres: transaction-scoped advisory locks, the way its concurrent writers serialise.

A lock is held until the transaction commits or rolls back (or a killed client's
connection drops). Its key is one bigint, or two ints when ``space`` names the
first: the two key spaces never collide.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["lock"]


async def lock(
    session: AsyncSession,
    key: int | Sequence[int],
    *,
    space: int | None,
    shared: bool,
    wait: bool,
) -> bool:
    """Take ``key`` (or each of the sequence ``key``, in its order, in one statement)."""
    function = f"pg_{'' if wait else 'try_'}advisory_xact_lock{'_shared' if shared else ''}"
    params: dict[str, object] = {} if space is None else {"c": space}
    if isinstance(key, int):
        params["k"] = key
        args = ":k" if space is None else ":c, :k"
        statement = text(f"SELECT {function}({args})")
        if not wait:
            return bool(await session.scalar(statement, params))
        await session.execute(statement, params)
        return True
    if not wait:
        raise ValueError("only a single advisory lock can be tried without waiting")
    params["keys"] = list(key)
    args = "k" if space is None else ":c, k"
    kind = "bigint" if space is None else "integer"
    await session.execute(
        text(f"SELECT {function}({args}) FROM unnest(CAST(:keys AS {kind}[])) AS k"), params
    )
    return True
