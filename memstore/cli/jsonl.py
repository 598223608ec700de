"""Tenant dumps as JSON Lines, streamed both ways.

Line 1 is the header (``format``, ``user_id``, ``exported_at``, ``backend``,
``schema_revision``, ``tables``); then one ``{"table": ..., "row": ...}`` line per
row, parents before children; the last line is ``{"end": {"rows": {table: n}}}``
so a truncated file is detected and imports nothing. Output is pure ASCII
(``\\uXXXX`` escapes), so no character in the data can break a line.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import IO, Any

from memstore.errors import InvalidInput
from memstore.services.limits import FROM_DUMP, FromDump
from memstore.store import MemoryStore

__all__ = ["read_jsonl", "write_jsonl"]


def _line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=(",", ":")) + "\n"


async def write_jsonl(store: MemoryStore, out: IO[str], *, user_id: str | None) -> dict[str, int]:
    """Write one tenant's dump to ``out``; returns rows per table."""
    header = await store.export_header(user_id=user_id)
    out.write(_line(header))
    counts = dict.fromkeys(header["tables"], 0)
    async for table, row in store.export_stream(user_id=user_id):
        out.write(_line({"table": table, "row": row}))
        counts[table] += 1
    out.write(_line({"end": {"rows": counts}}))
    out.flush()
    return counts


def _parse(number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise InvalidInput(f"line {number}: not JSON ({exc})") from exc


async def read_jsonl(
    store: MemoryStore, lines: Iterable[str], *, user_id: str | FromDump | None = FROM_DUMP
) -> dict[str, int]:
    """Import a dump written by :func:`write_jsonl` (all or nothing); rows per table."""
    numbered = enumerate(lines, start=1)
    first = next(numbered, None)
    if first is None:
        raise InvalidInput("empty dump")
    header = _parse(*first)
    if not isinstance(header, dict):
        raise InvalidInput("line 1: the header must be a JSON object")
    seen: dict[str, int] = {}

    async def rows() -> AsyncIterator[tuple[str, Any]]:
        for number, line in numbered:
            if not line.strip():
                continue
            record = _parse(number, line)
            if isinstance(record, dict) and "end" in record:
                end = record["end"]
                expected = end.get("rows") if isinstance(end, dict) else None
                if (
                    not isinstance(expected, dict)
                    or {k: v for k, v in expected.items() if v} != seen
                ):
                    raise InvalidInput(
                        f"line {number}: row counts {seen} differ from the trailer's {expected}"
                    )
                if next(numbered, None) is not None:
                    raise InvalidInput(f"line {number + 1}: data after the end line")
                return
            if not isinstance(record, dict) or set(record) != {"table", "row"}:
                raise InvalidInput(f'line {number}: expected {{"table": ..., "row": ...}}')
            seen[record["table"]] = seen.get(record["table"], 0) + 1
            yield record["table"], record["row"]
        raise InvalidInput("the dump is truncated (no end line); nothing was imported")

    return await store.import_rows(header, rows(), user_id=user_id)
