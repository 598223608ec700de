"""Postgres: commits wake listeners by NOTIFY; one LISTENing connection per store.

The writing transaction calls ``pg_notify`` (:func:`announce`; delivered only if it
commits). One
dedicated asyncpg connection per store ``LISTEN``s, opened on the first waiter and
closed with the store; it dispatches in-process to the waiters of the hint's tenant.
After the connection is lost it reconnects with backoff and wakes every waiter,
since notifications sent in the gap are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.backends.postgresql.connections import connect_args_of, connect_postgres
from memstore.db.signal import CHANNEL, ChangeSignal

__all__ = ["LISTENER_APPLICATION_NAME", "announce", "listen"]

_log = logging.getLogger(__name__)

# The listening connection's application_name, so an operator (and the tests)
# can find it in pg_stat_activity.
LISTENER_APPLICATION_NAME = "memstore-listener"
# How often the idle listening connection is checked to be alive: a server that
# vanished without closing the socket sends no termination.
_KEEPALIVE_S = 5.0
_BACKOFF_MIN_S = 0.05
_BACKOFF_MAX_S = 2.0
_CONNECT_TIMEOUT_S = 10.0


async def announce(session: AsyncSession, channel: str, payload: str) -> None:
    """NOTIFY ``channel`` with ``payload``, delivered only if the transaction commits."""
    await session.execute(
        text("SELECT pg_notify(:channel, :payload)"), {"channel": channel, "payload": payload}
    )


async def listen(signal: ChangeSignal) -> None:
    backoff = _BACKOFF_MIN_S
    while not signal.closed:
        try:
            connection = await _connect(signal)
        except Exception as exc:  # a server that is down: keep trying, waiters time out
            _log.warning("memstore: cannot LISTEN (%s); retrying in %.2fs", exc, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX_S)
            continue
        backoff = _BACKOFF_MIN_S
        signal.connections += 1
        try:
            await _serve(signal, connection)
        finally:
            signal.connections -= 1
            signal.watching(now=False)
            with contextlib.suppress(Exception):
                await asyncio.shield(connection.close(timeout=1.0))
            # Whatever was notified while no one listened is lost: everyone looks.
            signal.wake_all()
        if not signal.closed:
            signal.reconnects += 1


async def _connect(signal: ChangeSignal) -> Any:
    args, params = signal.engine.dialect.create_connect_args(signal.engine.url)
    # The pool's own arguments (TLS, connect timeout, the URL's settings).
    params.update(connect_args_of(signal.engine))
    params.setdefault("timeout", _CONNECT_TIMEOUT_S)
    for dialect_only in ("async_creator_fn", "prepared_statement_cache_size"):
        params.pop(dialect_only, None)
    settings = dict(params.pop("server_settings", None) or {})
    settings["application_name"] = LISTENER_APPLICATION_NAME
    return await connect_postgres(*args, **params, server_settings=settings)


async def _serve(signal: ChangeSignal, connection: Any) -> None:
    lost = asyncio.Event()
    connection.add_termination_listener(lambda _c: lost.set())

    def on_notify(_c: Any, _pid: int, _channel: str, payload: str) -> None:
        signal.recent.append(payload)
        signal.wake(payload)

    await connection.add_listener(CHANNEL, on_notify)
    signal.watching(now=True)
    # After a reconnect, what was notified in the gap is lost: everyone looks
    # again (after the first connect, waiters registered meanwhile look once more).
    signal.wake_all()
    while not signal.closed and not lost.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_KEEPALIVE_S):
                await lost.wait()
                return
        try:
            await connection.fetchval("SELECT 1", timeout=_KEEPALIVE_S)
        except Exception:
            return
