"""import_ validates every row like the write API (InvalidImportRow naming table, row and
column, nothing written), and two concurrent imports into one empty tenant never merge."""

from __future__ import annotations

import asyncio
import base64
import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memstore import Conflict, Episode, InvalidImportRow, InvalidInput, MemoryStore, TaskState
from tests.conftest import table_counts
from tests.test_export_import import populate

Dump = dict[str, Any]


Corruption = Callable[[Dump], int]  # changes one row, returns its position


def first(
    dump: Dump, table: str, where: Callable[[dict[str, Any]], bool] = lambda r: True
) -> tuple[int, dict[str, Any]]:
    return next((i, r) for i, r in enumerate(dump["tables"][table]) if where(r))


def set_col(
    table: str, column: str, value: Any, where: Callable[[dict[str, Any]], bool] = lambda r: True
) -> Corruption:
    def corrupt(dump: Dump) -> int:
        index, row = first(dump, table, where)
        row[column] = value
        return index

    return corrupt


def width(delta: int) -> Corruption:
    def corrupt(dump: Dump) -> int:
        index, row = first(dump, "episodes")
        row["embedding"] = (
            row["embedding"][: len(row["embedding"]) + delta]
            if delta < 0
            else (row["embedding"] + [0.0] * delta)
        )
        return index

    return corrupt


def nan_embedding(dump: Dump) -> int:
    index, row = first(dump, "episodes")
    row["embedding"][3] = math.nan
    return index


def bad_progress(dump: Dump) -> int:
    index, row = first(dump, "working_memory", is_task_state)
    row["value"]["progress_percent"] = 150
    return index


def drop_session_id(dump: Dump) -> int:
    index, row = first(dump, "episodes")
    row.pop("session_id")
    return index


def is_task_state(row: dict[str, Any]) -> bool:
    return row["key"] == "_task_state"


def blob(*values: float) -> str:
    return base64.b64encode(np.array(values, dtype="<f4").tobytes()).decode()


def nan_vectors(dump: Dump) -> int:
    index, row = first(dump, "langgraph_items")
    vectors = np.frombuffer(base64.b64decode(row["vectors"]), dtype="<f4").copy()
    vectors[5] = math.nan
    row["vectors"] = base64.b64encode(vectors.tobytes()).decode()
    return index


def lg(column: str, value: Any) -> Corruption:
    return set_col("langgraph_items", column, value)


# What the LangGraph store's own writes never store.
LANGGRAPH_CASES: list[tuple[str, Corruption, str, str]] = [
    ("vectors not float32", lg("vectors", base64.b64encode(b"\x01" * 6).decode()), "vectors"),
    ("vectors of another width", lg("vectors", blob(*[0.1] * 48)), "vectors"),
    ("vectors NaN", nan_vectors, "vectors"),
    ("vectors empty", lg("vectors", ""), "vectors"),
    ("value a list", lg("value", [1, 2]), "value"),
    ("value a string", lg("value", "likes tea"), "value"),
    ("ttl negative", lg("ttl_minutes", -5.0), "ttl_minutes"),
    ("ttl zero", lg("ttl_minutes", 0.0), "ttl_minutes"),
    ("ttl without expiry", lg("expires_at", None), "expires_at"),
    ("namespace empty label", lg("namespace", "memories..prefs"), "namespace"),
    ("namespace leading dot", lg("namespace", ".memories"), "namespace"),
    ("namespace NUL", lg("namespace", "memories.pr\x00efs"), "namespace"),
    ("key empty", lg("key", ""), "key"),
    ("index_fields text", lg("index_fields", "text"), "index_fields"),
    ("index_fields empty path", lg("index_fields", [""]), "index_fields"),
]


# (case, corruption, table, column)
CASES: list[tuple[str, Corruption, str, str]] = [
    ("embedding too short", width(-1), "episodes", "embedding"),
    ("embedding too wide", width(+7), "episodes", "embedding"),
    ("embedding NaN", nan_embedding, "episodes", "embedding"),
    (
        "embedding of strings",
        set_col("episodes", "embedding", ["x"] * 384),
        "episodes",
        "embedding",
    ),
    ("occurred_at number", set_col("episodes", "occurred_at", 12345), "episodes", "occurred_at"),
    (
        "occurred_at naive",
        set_col("episodes", "occurred_at", "2026-03-01T00:00:00"),
        "episodes",
        "occurred_at",
    ),
    ("turn text", set_col("episodes", "turn", "three"), "episodes", "turn"),
    ("turn negative", set_col("episodes", "turn", -1), "episodes", "turn"),
    ("turn beyond 64 bits", set_col("episodes", "turn", 2**70), "episodes", "turn"),
    ("turn beyond 32 bits", set_col("episodes", "turn", 2**31), "episodes", "turn"),
    # The session's next turn (this one + 1) must fit the counter too.
    ("turn at the counter's end", set_col("episodes", "turn", 2**31 - 1), "episodes", "turn"),
    (
        "next_turn beyond 32 bits",
        set_col("session_turns", "next_turn", 2**40),
        "session_turns",
        "next_turn",
    ),
    (
        "access_count beyond 64 bits",
        set_col("access_stats", "access_count", 2**70),
        "access_stats",
        "access_count",
    ),
    ("metadata list", set_col("episodes", "metadata", [1, 2]), "episodes", "metadata"),
    ("tool_calls object", set_col("episodes", "tool_calls", {"a": 1}), "episodes", "tool_calls"),
    ("episode id too long", set_col("episodes", "id", "x" * 37), "episodes", "id"),
    ("sources number", set_col("facts", "sources", 5), "facts", "sources"),
    ("confidence text", set_col("facts", "confidence", "high"), "facts", "confidence"),
    ("confidence out of range", set_col("facts", "confidence", 1.5), "facts", "confidence"),
    ("single_valued number", set_col("facts", "single_valued", 1), "facts", "single_valued"),
    (
        "valid_to before valid_from",
        set_col("facts", "valid_to", "2000-01-01T00:00:00+00:00"),
        "facts",
        "valid_to",
    ),
    ("subject NUL", set_col("facts", "subject", "a\x00b"), "facts", "subject"),
    ("subject unstripped", set_col("facts", "subject", " me"), "facts", "subject"),
    ("predicate not normalised", set_col("facts", "predicate", "Lives In"), "facts", "predicate"),
    (
        "checkpoint data empty",
        set_col("working_memory_checkpoints", "data", {}),
        "working_memory_checkpoints",
        "data",
    ),
    (
        "task state malformed",
        set_col("working_memory", "value", {"task_id": "t"}, is_task_state),
        "working_memory",
        "value",
    ),
    ("task state bad progress", bad_progress, "working_memory", "value"),
    (
        "reserved key",
        set_col("working_memory", "key", "_secret", lambda r: r["key"] == "plan"),
        "working_memory",
        "key",
    ),
    (
        "next_slot_index below slots",
        set_col("threads", "next_slot_index", 1),
        "threads",
        "next_slot_index",
    ),
    ("block version zero", set_col("blocks", "version", 0), "blocks", "version"),
    ("access kind", set_col("access_stats", "kind", "secret"), "access_stats", "kind"),
    ("missing column", drop_session_id, "episodes", "session_id"),
    *((case, corrupt, "langgraph_items", column) for case, corrupt, column in LANGGRAPH_CASES),
]


@pytest.fixture
async def good_dump(store: MemoryStore, db_url: str) -> Dump:
    await populate(store, db_url, "src")
    wm = store.working_memory(session_id="s1", project_id="p", agent_id="a", user_id="src")
    await wm.set_task_state(TaskState(task_id="t1", total_steps=3))
    dump = await store.export(user_id="src")
    assert dump["tables"]["slots"] and dump["tables"]["working_memory_checkpoints"]
    return dump


@pytest.mark.parametrize(("case", "corrupt", "table", "column"), CASES, ids=[c[0] for c in CASES])
async def test_import_refuses_what_the_api_refuses(
    db_url: str,
    store: MemoryStore,
    good_dump: Dump,
    case: str,
    corrupt: Corruption,
    table: str,
    column: str,
) -> None:
    bad = copy.deepcopy(good_dump)
    row = corrupt(bad)
    with pytest.raises(InvalidImportRow) as caught:
        await store.import_(bad, user_id="dst")
    error = caught.value
    assert (error.table, error.row, error.column) == (table, row, column), str(error)
    assert f"{table}[{row}].{column}" in str(error)
    assert set((await table_counts(db_url, "dst")).values()) == {0}, "something was written"
    # The tenant is still empty and usable: the good dump imports.
    await store.import_(good_dump, user_id="dst")
    assert await store.recall("paris", user_id="dst")


async def test_dump_rows_that_contradict_each_other_are_invalid(
    db_url: str, store: MemoryStore, good_dump: Dump
) -> None:
    bad = copy.deepcopy(good_dump)
    bad["tables"]["episodes"].append(copy.deepcopy(bad["tables"]["episodes"][0]))
    with pytest.raises(InvalidInput, match="episodes"):
        await store.import_(bad, user_id="dst")
    assert set((await table_counts(db_url, "dst")).values()) == {0}


async def test_imported_sessions_continue_with_fresh_turns(
    store: MemoryStore, good_dump: Dump
) -> None:
    old = copy.deepcopy(good_dump)
    old["tables"].pop("session_turns", None)  # a dump written before revision 0006
    await store.import_(old, user_id="dst")
    await store.remember(Episode(user_id="dst", session_id="s1", input="next"))
    messages = await store.session_messages("s1", user_id="dst")
    assert messages[-1].content == "next"


# Rows per dump. 300 keeps the two imports' transactions overlapping: without the
# import lock (TenantRepository.lock_for_import) both land on Postgres, as seen; with
# 3000 the first import was done before the second began, and the test passed without it.
CONCURRENT_ROWS = 300


async def test_concurrent_imports_into_one_empty_tenant(db_url: str) -> None:
    async with MemoryStore.open(db_url) as a, MemoryStore.open(db_url) as b:
        dumps = []
        for source in ("src1", "src2"):  # different rows: nothing collides by key
            await a.remember_many(
                [
                    Episode(user_id=source, session_id=f"s{i % 7}", input=f"turn {i}")
                    for i in range(CONCURRENT_ROWS)
                ]
            )
            dumps.append(await a.export(user_id=source))
        for attempt in range(3):
            target = f"dst{attempt}"
            results = await asyncio.gather(
                a.import_(dumps[0], user_id=target),
                b.import_(dumps[1], user_id=target),
                return_exceptions=True,
            )
            conflicts = [r for r in results if isinstance(r, Conflict)]
            landed = [r for r in results if isinstance(r, dict)]
            assert len(landed) == 1 and len(conflicts) == 1, results
            assert (await a.profile(user_id=target)).episode_count == CONCURRENT_ROWS
