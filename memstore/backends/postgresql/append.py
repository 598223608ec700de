"""A thread append in one statement: the slot, both counters, the change row and the NOTIFY.

One data-modifying CTE does what the repositories do in five statements
(memstore.services.threads explains the counters):

- ``t`` claims the thread's next index (creating the thread); no row when the
  thread is full, and then nothing below inserts anything;
- ``s`` inserts the slot at that index;
- ``h`` claims the tenant's next change number (creating its log's head);
- ``c`` inserts the change row with that number;
- the outer query returns the index and the log's epoch and sends the wake-up
  hint, which Postgres delivers only if the statement's transaction commits.

Locks are taken in the repositories' order (thread row, then the change head),
and each upsert keeps its row locked until commit: concurrent appenders number
slots and changes exactly as before. Citus plans a data-modifying CTE as
subplans run through the coordinator, never as one router task, so on a
Citus database this answers None and the caller runs the repositories' routed
statements instead.
"""

from __future__ import annotations

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from memstore.backends.postgresql.session import on_citus
from memstore.db.signal import CHANNEL, HINT_SQL
from memstore.db.types import JSONDoc, UTCDateTime
from memstore.dialects.base import AppendedSlot, SlotAppend
from memstore.types import ChangeKind

__all__ = ["APPEND_SQL", "append_slot"]

APPEND_SQL = f"""\
WITH t AS (
    INSERT INTO threads AS th (user_id, thread_id, next_slot_index, created_at, last_activity_at)
    VALUES (:user_id, :thread_id, 1, :now, :now)
    ON CONFLICT (user_id, thread_id) DO UPDATE
    SET next_slot_index = th.next_slot_index + 1, last_activity_at = excluded.last_activity_at
    WHERE th.next_slot_index < :max_slots
    RETURNING th.user_id, th.thread_id, th.next_slot_index - 1 AS slot_index
), s AS (
    INSERT INTO slots (user_id, thread_id, slot_index, from_id, to_id, payload_type, payload,
        own_name, is_self_call, usage_instructions, todo_nudge, created_at)
    SELECT t.user_id, t.thread_id, t.slot_index, CAST(:from_id AS VARCHAR),
        CAST(:to_id AS VARCHAR), CAST(:payload_type AS VARCHAR), CAST(:payload AS JSONB),
        CAST(:own_name AS VARCHAR), CAST(:is_self_call AS BOOLEAN),
        CAST(:usage_instructions AS TEXT), CAST(:todo_nudge AS TEXT), CAST(:now AS TIMESTAMPTZ)
    FROM t
    RETURNING user_id, thread_id, slot_index
), h AS (
    INSERT INTO change_heads AS hd (user_id, epoch, last_seq, pruned_through)
    SELECT s.user_id, CAST(:epoch AS VARCHAR), 1, 0 FROM s
    ON CONFLICT (user_id) DO UPDATE SET last_seq = hd.last_seq + 1
    RETURNING hd.user_id, hd.last_seq, hd.epoch
), c AS (
    INSERT INTO changes (user_id, seq, kind, key, slot_index, created_at)
    SELECT h.user_id, h.last_seq, '{ChangeKind.THREAD_APPENDED}', s.thread_id, s.slot_index,
        CAST(:now AS TIMESTAMPTZ)
    FROM h JOIN s ON s.user_id = h.user_id
    RETURNING seq
)
SELECT s.slot_index, h.epoch, pg_notify(:channel, {HINT_SQL.format(epoch="h.epoch")})
FROM s JOIN h ON h.user_id = s.user_id"""

_STATEMENT = text(APPEND_SQL).bindparams(
    bindparam("now", type_=UTCDateTime()),
    bindparam("payload", type_=JSONDoc),
)


async def append_slot(
    reader: AsyncSession | AsyncConnection, append: SlotAppend
) -> AppendedSlot | None:
    connection = await reader.connection() if isinstance(reader, AsyncSession) else reader
    if await on_citus(connection):
        return None
    result = await reader.execute(
        _STATEMENT,
        {
            "user_id": append.user_id,
            "thread_id": append.thread_id,
            "now": append.now,
            "max_slots": append.max_slots,
            "from_id": append.from_id,
            "to_id": append.to_id,
            "payload_type": append.payload_type,
            "payload": append.payload,
            "own_name": append.own_name,
            "is_self_call": append.is_self_call,
            "usage_instructions": append.usage_instructions,
            "todo_nudge": append.todo_nudge,
            "epoch": append.epoch,
            "channel": CHANNEL,
        },
    )
    row = result.first()
    if row is None:
        return AppendedSlot(index=None, epoch=None)
    return AppendedSlot(index=int(row[0]), epoch=str(row[1]))
