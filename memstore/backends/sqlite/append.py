"""A thread append in one call to the connection's thread: its whole transaction at once.

SQLite has no data-modifying CTE, so the append stays four statements (the
thread's counter, the slot, the tenant's change counter, the change row; see
memstore.services.threads for why the counters cannot collide). What they cost
is not SQLite's work but the hand-overs to the connection's worker thread:
through SQLAlchemy each statement is three or four of them (cursor, execute,
fetch, close), plus BEGIN's and COMMIT's. Here the statements, with BEGIN
IMMEDIATE and COMMIT around them on a connection of memstore's own, run as
one function on the worker thread: one hand-over per append. Waiting for the
write lock (busy_timeout) happens on that thread too, never on the event loop.

The statements are announced to the engine's ``before_cursor_execute`` /
``after_cursor_execute`` listeners (the slow-statement log, audits) as if
SQLAlchemy had run them; each is reported with the time of the whole call.
Driver errors are raised as SQLAlchemy's, for the unit of work to translate.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.engine import Dialect as SQLDialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from memstore.dialects.base import AppendedSlot, SlotAppend
from memstore.models import SlotRow
from memstore.types import ChangeKind

__all__ = ["CHANGE_SQL", "HEAD_SQL", "SLOT_SQL", "THREAD_SQL", "append_slot"]

THREAD_SQL = (
    "INSERT INTO threads AS th (user_id, thread_id, next_slot_index, created_at, "
    "last_activity_at) VALUES (?, ?, 1, ?, ?) ON CONFLICT (user_id, thread_id) DO UPDATE "
    "SET next_slot_index = th.next_slot_index + 1, last_activity_at = excluded.last_activity_at "
    "WHERE th.next_slot_index < ? RETURNING next_slot_index - 1"
)
SLOT_SQL = (
    "INSERT INTO slots (user_id, thread_id, slot_index, from_id, to_id, payload_type, payload, "
    "own_name, is_self_call, usage_instructions, todo_nudge, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
HEAD_SQL = (
    "INSERT INTO change_heads AS hd (user_id, epoch, last_seq, pruned_through) "
    "VALUES (?, ?, 1, 0) ON CONFLICT (user_id) DO UPDATE SET last_seq = hd.last_seq + 1 "
    "RETURNING last_seq, epoch"
)
CHANGE_SQL = (
    'INSERT INTO changes (user_id, seq, kind, "key", slot_index, created_at) '
    f"VALUES (?, ?, '{ChangeKind.THREAD_APPENDED}', ?, ?, ?)"
)

_Processor = Callable[[Any], Any]
# The bind processors of the columns bound here, per SQLAlchemy dialect: values
# are stored exactly as the repositories' statements store them.
_PROCESSORS: weakref.WeakKeyDictionary[SQLDialect, dict[str, _Processor | None]] = (
    weakref.WeakKeyDictionary()
)


def _processors(dialect: SQLDialect) -> dict[str, _Processor | None]:
    found = _PROCESSORS.get(dialect)
    if found is None:
        columns = SlotRow.__table__.c
        found = {
            name: columns[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in ("created_at", "payload", "is_self_call")
        }
        _PROCESSORS[dialect] = found
    return found


def _bound(dialect: SQLDialect, name: str, value: Any) -> Any:
    process = _processors(dialect)[name]
    return value if process is None else process(value)


def _run(
    conn: sqlite3.Connection,
    own: bool,
    append: SlotAppend,
    now: Any,
    slot: list[Any],
    running: list[str],
) -> tuple[int, str] | None:
    """The append's statements, on the connection's worker thread (``running``: the last)."""

    def execute(sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        running[0] = sql
        return conn.execute(sql, params)

    if own:
        execute("BEGIN IMMEDIATE")
    try:
        claimed = execute(
            THREAD_SQL, (append.user_id, append.thread_id, now, now, append.max_slots)
        ).fetchone()
        if claimed is None:
            # Full: the upsert changed nothing, but the transaction holds the lock.
            if own:
                execute("ROLLBACK")
            return None
        index = int(claimed[0])
        slot[2] = index
        execute(SLOT_SQL, slot)
        seq, epoch = execute(HEAD_SQL, (append.user_id, append.epoch)).fetchone()
        execute(CHANGE_SQL, (append.user_id, seq, append.thread_id, index, now))
        if own:
            execute("COMMIT")
    except BaseException:
        if own and conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return index, str(epoch)


def _announce(
    sync: Connection, statements: Sequence[tuple[str, Sequence[Any]]], event: str
) -> None:
    listeners = getattr(sync.dispatch, event)
    for sql, params in statements:
        listeners(sync, None, sql, params, None, False)


async def append_slot(
    reader: AsyncSession | AsyncConnection, append: SlotAppend
) -> AppendedSlot | None:
    # A caller's session: its transaction is begun already (Database.joined);
    # memstore's own connection runs in autocommit, so the transaction is ours.
    own = not isinstance(reader, AsyncSession)
    connection = reader if isinstance(reader, AsyncConnection) else await reader.connection()
    dialect = connection.dialect
    now = _bound(dialect, "created_at", append.now)
    slot = [
        append.user_id,
        append.thread_id,
        None,  # the index, once claimed
        append.from_id,
        append.to_id,
        append.payload_type,
        _bound(dialect, "payload", append.payload),
        append.own_name,
        _bound(dialect, "is_self_call", append.is_self_call),
        append.usage_instructions,
        append.todo_nudge,
        now,
    ]
    statements = [
        (THREAD_SQL, (append.user_id, append.thread_id, now, now, append.max_slots)),
        (SLOT_SQL, slot),
        (HEAD_SQL, (append.user_id, append.epoch)),
        (CHANGE_SQL, (append.user_id, None, append.thread_id, None, now)),
    ]
    driver = (await connection.get_raw_connection()).driver_connection
    sync = connection.sync_connection
    assert driver is not None and sync is not None  # a live connection of aiosqlite
    running = [THREAD_SQL]
    _announce(sync, statements, "before_cursor_execute")
    try:
        # aiosqlite runs a function on the connection's thread only through its
        # _execute; its own execute() would be one hand-over per statement.
        done = await driver._execute(  # noqa: SLF001
            _run,
            driver._conn,  # noqa: SLF001
            own,
            append,
            now,
            slot,
            running,
        )
    except sqlite3.Error as error:
        raise sa_exc.DBAPIError.instance(
            running[0], None, error, sqlite3.Error, dialect=dialect
        ) from error
    finally:
        _announce(sync, statements[::-1], "after_cursor_execute")
    if done is None:
        return AppendedSlot(index=None, epoch=None)
    return AppendedSlot(index=done[0], epoch=done[1])
