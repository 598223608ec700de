"""What Postgres needs of a transaction memstore runs in: the tenant named, the codec known."""

from __future__ import annotations

import weakref
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from memstore.backends.postgresql.connections import register_vector_codec

__all__ = ["join", "on_citus", "set_tenant"]

# asyncpg connections of other engines that were given the vector codec.
_CODEC_READY: weakref.WeakSet[Any] = weakref.WeakSet()


async def join(session: AsyncSession) -> None:
    """Ready a caller's session for memstore's statements."""
    await _with_vector_codec(session)


async def set_tenant(session: AsyncSession, setting: str, tenant: str) -> None:
    """Name the transaction's tenant in ``setting``, transaction-locally."""
    connection = await session.connection()
    if not await on_citus(connection):
        await session.execute(select(func.set_config(setting, tenant, True)))
        return
    # The policies run on the workers that hold the shards. Citus passes a
    # setting on to them (now, and to each worker the transaction reaches
    # later) only as a SET LOCAL statement, and only while this is on;
    # set_config() would stay on the coordinator and the shards would see no
    # tenant. SET takes no bind parameter, hence the literal.
    await connection.exec_driver_sql("SET LOCAL citus.propagate_set_commands TO 'local'")
    await connection.exec_driver_sql(f"SET LOCAL {setting} TO {_literal(tenant)}")


# Connection-record entry: whether the connection's database has the citus extension.
_CITUS = "memstore_citus"


async def on_citus(connection: AsyncConnection) -> bool:
    """Whether ``connection``'s database is a Citus one (asked once per server connection)."""
    known = connection.info.get(_CITUS)
    if known is None:
        found = await connection.exec_driver_sql(
            "SELECT 1 FROM pg_extension WHERE extname = 'citus'"
        )
        known = connection.info[_CITUS] = found.first() is not None
    return bool(known)


def _literal(value: str) -> str:
    """``value`` as a PostgreSQL string constant, whatever standard_conforming_strings is.

    An escape string (E'...') reads a backslash as an escape in every
    configuration, so doubling backslashes and quotes leaves nothing that could
    end the constant. Tenant ids hold no control characters (core.validation).
    """
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


async def _with_vector_codec(session: AsyncSession) -> None:
    """Give a caller's asyncpg connection pgvector's codec, as the store's engine has.

    An application's own engine has none of memstore's connect hooks; without
    the codec its connection could not bind or read the embedding columns.
    """
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    if driver is None or driver in _CODEC_READY:
        return
    await register_vector_codec(driver)
    _CODEC_READY.add(driver)
