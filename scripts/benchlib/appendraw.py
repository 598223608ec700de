"""A thread append written by hand on the raw driver: the baseline of ``threads.append``.

    python scripts/benchlib/appendraw.py KIND URL N      (prints appends per second)

Run by scripts/bench_live.py in a process of its own, on a database memstore migrated,
with the same warm-up and loop as its ``threads.append`` child. Each append does what
memstore's does: claim the thread's next index, insert the slot, claim the tenant's next
change number, insert the change row, and (Postgres) NOTIFY the tenant's hint, in one
transaction. KIND:

- ``asyncpg``: one data-modifying CTE, all of it in one statement (autocommit);
- ``aiosqlite``: BEGIN IMMEDIATE, the four statements, COMMIT, each an aiosqlite call
  (the fewest statements SQLite allows; one worker-thread hand-over per call);
- ``aiosqlite-one-call``: the same statements run as one function on the connection's
  worker thread (aiosqlite's private ``_execute``): one hand-over per append.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.turnsql import SQLITE

__all__ = ["PG_APPEND", "main"]

MAX_SLOTS = 10_000
USER = "bench"

PG_APPEND = """\
WITH t AS (
    INSERT INTO threads AS th (user_id, thread_id, next_slot_index, created_at, last_activity_at)
    VALUES ($1, $2, 1, $3, $3)
    ON CONFLICT (user_id, thread_id) DO UPDATE
    SET next_slot_index = th.next_slot_index + 1, last_activity_at = excluded.last_activity_at
    WHERE th.next_slot_index < $4
    RETURNING th.user_id, th.thread_id, th.next_slot_index - 1 AS slot_index
), s AS (
    INSERT INTO slots (user_id, thread_id, slot_index, from_id, to_id, payload_type, payload,
        own_name, is_self_call, usage_instructions, todo_nudge, created_at)
    SELECT t.user_id, t.thread_id, t.slot_index, $5::varchar, $6::varchar, 'dict',
        $7::jsonb, NULL, false, '', '', $3
    FROM t RETURNING user_id, thread_id, slot_index
), h AS (
    INSERT INTO change_heads AS hd (user_id, epoch, last_seq, pruned_through)
    SELECT s.user_id, $8::varchar, 1, 0 FROM s
    ON CONFLICT (user_id) DO UPDATE SET last_seq = hd.last_seq + 1
    RETURNING hd.user_id, hd.last_seq, hd.epoch
), c AS (
    INSERT INTO changes (user_id, seq, kind, key, slot_index, created_at)
    SELECT h.user_id, h.last_seq, 'thread_appended', s.thread_id, s.slot_index, $3
    FROM h JOIN s ON s.user_id = h.user_id RETURNING seq
)
SELECT s.slot_index, pg_notify('memstore_changes',
    left(encode(sha256(convert_to('mshint:' || h.epoch, 'UTF8')), 'hex'), 16))
FROM s JOIN h ON h.user_id = s.user_id"""


async def _asyncpg(url: str, n: int) -> float:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))

    async def append(thread: str, payload: Any) -> None:
        now = datetime.now(UTC)
        await conn.fetchrow(
            PG_APPEND,
            USER,
            thread,
            now,
            MAX_SLOTS,
            "A",
            "B",
            json.dumps(payload),
            str(uuid.uuid4()),
        )

    try:
        return await _timed(append, n)
    finally:
        await conn.close()


def _sqlite_body(conn: Any, thread: str, payload: str, stamp: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        (index,) = conn.execute(SQLITE.thread, (USER, thread, stamp, stamp, MAX_SLOTS)).fetchone()
        slot = (USER, thread, index - 1, "A", "B", "dict", payload, None, 0, "", "", stamp)
        conn.execute(SQLITE.slot, slot)
        seq, _epoch = conn.execute(SQLITE.head, (USER, str(uuid.uuid4()))).fetchone()
        conn.execute(SQLITE.change, (USER, seq, "thread_appended", thread, index - 1, stamp))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


async def _aiosqlite(url: str, n: int, one_call: bool) -> float:
    import aiosqlite

    conn = await aiosqlite.connect(url.split(":///", 1)[1], isolation_level=None)
    for pragma in ("busy_timeout = 30000", "journal_mode = WAL", "synchronous = NORMAL"):
        await conn.execute(f"PRAGMA {pragma}")
    for pragma in ("foreign_keys = ON", "secure_delete = ON"):
        await conn.execute(f"PRAGMA {pragma}")

    async def append(thread: str, payload: Any) -> None:
        # As memstore stores a timestamp on SQLite: naive UTC text.
        stamp = datetime.now(UTC).replace(tzinfo=None).isoformat(" ")
        text = json.dumps(payload)
        if one_call:
            worker: Any = conn  # its _execute is untyped
            await worker._execute(_sqlite_body, conn._conn, thread, text, stamp)  # noqa: SLF001
            return
        await conn.execute("BEGIN IMMEDIATE")
        try:
            rows = await conn.execute_fetchall(
                SQLITE.thread, (USER, thread, stamp, stamp, MAX_SLOTS)
            )
            index = next(iter(rows))[0]
            slot = (USER, thread, index - 1, "A", "B", "dict", text, None, 0, "", "", stamp)
            await conn.execute_fetchall(SQLITE.slot, slot)
            rows = await conn.execute_fetchall(SQLITE.head, (USER, str(uuid.uuid4())))
            seq = next(iter(rows))[0]
            change = (USER, seq, "thread_appended", thread, index - 1, stamp)
            await conn.execute_fetchall(SQLITE.change, change)
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise

    try:
        return await _timed(append, n)
    finally:
        await conn.close()


async def _timed(append: Any, n: int) -> float:
    for i in range(50):  # warm-up, as memstore's child: statement caches, the pages
        await append("warm", i)
    start = time.perf_counter()
    for i in range(n):
        await append("t", {"task": i})
    return n / (time.perf_counter() - start)


def main(argv: list[str]) -> None:
    kind, url, n = argv[0], argv[1], int(argv[2])
    if kind == "asyncpg":
        rate = asyncio.run(_asyncpg(url, n))
    elif kind in ("aiosqlite", "aiosqlite-one-call"):
        rate = asyncio.run(_aiosqlite(url, n, kind == "aiosqlite-one-call"))
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    print(rate)


if __name__ == "__main__":
    main(sys.argv[1:])
