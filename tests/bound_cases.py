"""One call of every public method of a bound store (``store.bind(session)``), for
tests/test_bind_every_method.py: the store's own, ``threads``' and working memory's.

Each :class:`Case` calls its method through the bound view with arguments that
make it do its work on the seeded tenant (:class:`Seeded`), says whether it
writes (then the caller's transaction must hold the writes) or is refused by
nature (:class:`~memstore.Unsupported`), and may check what it returned.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from memstore import Episode, Fact, MemoryStore, TaskState, WorkingMemory
from tests.conftest import ManualClock

__all__ = ["CASES", "NOT_CALLED", "USER", "Case", "Seeded", "public_names"]

USER = "alice"
SESSION = "s1"
THREAD = "t1"


@dataclass
class Seeded:
    """What the seed committed before the caller's transaction began."""

    episode: str
    fact: str
    checkpoint: str
    dump: dict[str, Any]
    clock: ManualClock
    session: AsyncSession  # the caller's


def memory(view: MemoryStore) -> WorkingMemory:
    """The seeded working memory (a session scope under a project: it has a parent)."""
    return view.working_memory(project_id="p1", session_id=SESSION, user_id=USER)


async def seed(store: MemoryStore, clock: ManualClock, session: AsyncSession) -> Seeded:
    episode = await store.remember(
        Episode(user_id=USER, session_id=SESSION, input="I ordered a brass lamp", output="ok")
    )
    fact = await store.add_fact(Fact(user_id=USER, subject=USER, predicate="likes", object="tea"))
    await store.update_block("persona", "likes lamps", user_id=USER)
    await store.threads.append(THREAD, {"n": 1}, from_id="a", to_id="b", user_id=USER)
    wm = memory(store)
    await wm.set("k", 1)
    await wm.set("short", 2, ttl_seconds=60)
    await wm.append_scratchpad("a note")
    await wm.set_task_state(TaskState(task_id="task", total_steps=4))
    checkpoint = await wm.create_checkpoint("before")
    dump = await store.export(user_id=USER)
    # Buffered, not flushed: a flush through the view writes it.
    store.record_access("episode", [episode], user_id=USER)
    return Seeded(episode, fact, checkpoint, dump, clock, session)


Call = Callable[[MemoryStore, Seeded], Any]


@dataclass(frozen=True)
class Case:
    call: Call
    writes: bool = False
    refused: bool = False
    check: Callable[[Any, Seeded], bool] | None = None


def _w(call: Call, check: Callable[[Any, Seeded], bool] | None = None) -> Case:
    return Case(call, writes=True, check=check)


def _r(call: Call, check: Callable[[Any, Seeded], bool] | None = None) -> Case:
    return Case(call, check=check)


def _refused(call: Call) -> Case:
    return Case(call, refused=True)


def _ep(text: str) -> Episode:
    return Episode(user_id=USER, session_id="s2", input=text)


def _later(seeded: Seeded, call: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
    """``call`` two hours on: the seeded 60 s key has expired and the thread is idle."""
    seeded.clock.advance(hours=2)
    return call()


async def _unrecorded(view: MemoryStore, seeded: Seeded) -> list[Episode]:
    with view.reads_unrecorded():
        return await view.recall("brass lamp", user_id=USER)


def _ids(found: list[Any]) -> list[str]:
    return [getattr(f, "id", None) or getattr(f, "fact_id", None) for f in found]


_STORE: dict[str, Case] = {
    "backend": _r(lambda v, s: v.backend, lambda r, s: r in ("sqlite", "postgresql")),
    "change_position": _r(
        lambda v, s: v.change_position(user_id=USER), lambda r, s: isinstance(r, str) and r
    ),
    "consolidator": _r(lambda v, s: v.consolidator(), lambda r, s: callable(r.run)),
    "embedder": _r(lambda v, s: v.embedder, lambda r, s: r.dim > 0),
    "langgraph_items": _r(lambda v, s: v.langgraph_items()),
    "access_counts": _r(
        lambda v, s: v.access_counts("episode", [s.episode], user_id=USER),
        lambda r, s: r == {s.episode: 1},
    ),
    "access_stats": _w(
        lambda v, s: v.access_stats(user_id=USER),
        lambda r, s: [a.item_id for a in r] == [s.episode],
    ),
    "add_fact": _w(
        lambda v, s: v.add_fact(Fact(user_id=USER, subject=USER, predicate="has", object="cat"))
    ),
    "append_block": _w(
        lambda v, s: v.append_block("persona", " and tea", user_id=USER),
        lambda r, s: r.content == "likes lamps and tea",
    ),
    "assert_fact": _w(
        lambda v, s: v.assert_fact(
            Fact(user_id=USER, subject=USER, predicate="likes", object="coffee")
        )
    ),
    "bind": _w(
        lambda v, s: v.bind(s.session).update_block("notes", "rebound", user_id=USER),
        lambda r, s: r.content == "rebound",
    ),
    "block_history": _r(
        lambda v, s: v.block_history("persona", user_id=USER), lambda r, s: len(r) == 1
    ),
    "call_tool": _w(
        lambda v, s: v.call_tool(
            "remember_fact",
            {"subject": USER, "predicate": "owns", "object": "a lamp"},
            user_id=USER,
        )
    ),
    "changes": _refused(lambda v, s: v.changes(user_id=USER, after="")),
    "consolidate": _w(lambda v, s: v.consolidate(user_id=USER), lambda r, s: r.processed == 1),
    "consolidate_all_tenants": _w(
        lambda v, s: v.consolidate_all_tenants(), lambda r, s: r.processed == 1
    ),
    "context": _r(
        lambda v, s: v.context(user_id=USER, session_id=SESSION, query="brass lamp"),
        lambda r, s: "block:persona" in r.ids and f"episode:{s.episode}" in r.ids,
    ),
    "delete_block": _w(lambda v, s: v.delete_block("persona", user_id=USER)),
    "export": _r(
        lambda v, s: v.export(user_id=USER),
        lambda r, s: r["tables"]["episodes"] == s.dump["tables"]["episodes"],
    ),
    "export_header": _r(
        lambda v, s: v.export_header(user_id=USER),
        lambda r, s: r["schema_revision"] == s.dump["schema_revision"],
    ),
    "export_stream": _r(
        lambda v, s: v.export_stream(user_id=USER),
        lambda r, s: ("episodes", s.dump["tables"]["episodes"][0]) in r,
    ),
    "fact_history": _r(
        lambda v, s: v.fact_history(user_id=USER, subject=USER),
        lambda r, s: _ids(r) == [s.fact],
    ),
    "facts": _r(lambda v, s: v.facts(user_id=USER), lambda r, s: _ids(r) == [s.fact]),
    "flush_access": _w(lambda v, s: v.flush_access()),
    "forget": _w(lambda v, s: v.forget(user_id=USER), lambda r, s: r > 0),
    "gc": _w(
        lambda v, s: _later(s, lambda: v.gc(user_id=USER, thread_idle_ttl_seconds=60)),
        lambda r, s: r.expired_keys == 1 and [t.thread_id for t in r.threads] == [THREAD],
    ),
    "gc_all_tenants": _w(
        lambda v, s: _later(s, lambda: v.gc_all_tenants(thread_idle_ttl_seconds=60)),
        lambda r, s: r.expired_keys == 1 and [t.thread_id for t in r.threads] == [THREAD],
    ),
    "get_episode": _r(
        lambda v, s: v.get_episode(s.episode, user_id=USER), lambda r, s: r.id == s.episode
    ),
    "import_": _w(lambda v, s: v.import_(s.dump, user_id="bob"), lambda r, s: r["episodes"] == 1),
    "import_rows": _w(
        lambda v, s: v.import_rows(
            s.dump,
            [(t, row) for t, rows in s.dump["tables"].items() for row in rows],
            user_id="bob",
        ),
        lambda r, s: r["episodes"] == 1,
    ),
    "list_tenants_cross_tenant": _r(
        lambda v, s: v.list_tenants_cross_tenant(), lambda r, s: r == [USER]
    ),
    "loop": _r(lambda v, s: v.loop, lambda r, s: r is not None),
    "now": _r(lambda v, s: v.now(), lambda r, s: r == s.clock.now),
    "prefetch": _w(
        lambda v, s: v.prefetch(user_id=USER, session_id=SESSION),
        lambda r, s: f"episode:{s.episode}" in [i.id for i in r],
    ),
    "profile": _r(lambda v, s: v.profile(user_id=USER), lambda r, s: r.episode_count == 1),
    "reads_unrecorded": _r(_unrecorded, lambda r, s: _ids(r) == [s.episode]),
    "recall": _r(
        lambda v, s: v.recall("brass lamp", user_id=USER), lambda r, s: _ids(r) == [s.episode]
    ),
    "recall_facts": _r(
        lambda v, s: v.recall_facts("tea", user_id=USER), lambda r, s: _ids(r) == [s.fact]
    ),
    "recall_facts_scored": _r(
        lambda v, s: v.recall_facts_scored("tea", user_id=USER),
        lambda r, s: [m.fact.fact_id for m in r] == [s.fact],
    ),
    "recall_scored": _r(
        lambda v, s: v.recall_scored("brass lamp", user_id=USER),
        lambda r, s: [m.episode.id for m in r] == [s.episode],
    ),
    "record_access": _r(lambda v, s: v.record_access("fact", [s.fact], user_id=USER)),
    "remember": _w(lambda v, s: v.remember(_ep("a new turn"))),
    "remember_many": _w(
        lambda v, s: v.remember_many([_ep("one"), _ep("two")]), lambda r, s: len(r) == 2
    ),
    "retract_fact": _w(lambda v, s: v.retract_fact(s.fact, user_id=USER)),
    "session_messages": _r(
        lambda v, s: v.session_messages(SESSION, user_id=USER), lambda r, s: len(r) == 2
    ),
    "snapshot": _r(
        lambda v, s: v.snapshot(user_id=USER), lambda r, s: r["totals"]["episodes"] == 1
    ),
    "tenant": _w(
        lambda v, s: v.tenant(USER).update_block("notes", "through the handle"),
        lambda r, s: r.content == "through the handle",
    ),
    "tool_definitions": _r(lambda v, s: v.tool_definitions(), lambda r, s: len(r) == 3),
    # A new block: its insert runs in a savepoint, the transaction's first statement.
    "update_block": _w(
        lambda v, s: v.update_block("notes", "likes tea", user_id=USER),
        lambda r, s: r.version == 1,
    ),
    "working": _r(
        lambda v, s: v.working(user_id=USER), lambda r, s: [b.name for b in r] == ["persona"]
    ),
    "working_memory": _r(lambda v, s: memory(v), lambda r, s: isinstance(r, WorkingMemory)),
}

_THREADS: dict[str, Case] = {
    "append": _w(
        lambda v, s: v.threads.append(THREAD, {"n": 2}, from_id="b", to_id="a", user_id=USER),
        lambda r, s: r.index == 1,
    ),
    "append_from_log": _w(
        lambda v, s: v.threads.append_from_log(
            THREAD, lambda log: {"seen": len(log)}, from_id="b", to_id="a", user_id=USER
        ),
        lambda r, s: r.payload == {"seen": 1},
    ),
    "delete_thread": _w(
        lambda v, s: v.threads.delete_thread(THREAD, user_id=USER), lambda r, s: r is True
    ),
    "follow": _refused(lambda v, s: v.threads.follow(THREAD, after=-1, user_id=USER)),
    "get_by_type": _r(
        lambda v, s: v.threads.get_by_type(THREAD, "dict", user_id=USER), lambda r, s: len(r) == 1
    ),
    "get_from": _r(
        lambda v, s: v.threads.get_from(THREAD, "a", user_id=USER), lambda r, s: len(r) == 1
    ),
    "get_slice": _r(
        lambda v, s: v.threads.get_slice(THREAD, 0, 1, user_id=USER), lambda r, s: len(r) == 1
    ),
    "get_slot": _r(
        lambda v, s: v.threads.get_slot(THREAD, 0, user_id=USER),
        lambda r, s: r.payload == {"n": 1},
    ),
    "get_thread": _r(
        lambda v, s: v.threads.get_thread(THREAD, user_id=USER), lambda r, s: len(r) == 1
    ),
    "iterate": _r(lambda v, s: v.threads.iterate(THREAD, user_id=USER), lambda r, s: len(r) == 1),
    "length": _r(lambda v, s: v.threads.length(THREAD, user_id=USER), lambda r, s: r == 1),
    "list_threads": _r(lambda v, s: v.threads.list_threads(user_id=USER), lambda r, s: len(r) == 1),
    "stats": _r(lambda v, s: v.threads.stats(user_id=USER), lambda r, s: r["total_slots"] == 1),
    "thread_exists": _r(
        lambda v, s: v.threads.thread_exists(THREAD, user_id=USER), lambda r, s: r is True
    ),
    "thread_info": _r(
        lambda v, s: v.threads.thread_info(THREAD, user_id=USER),
        lambda r, s: r.slot_count == 1,
    ),
    "wait": _refused(lambda v, s: v.threads.wait(THREAD, after=-1, timeout=0, user_id=USER)),
}

_WORKING_MEMORY: dict[str, Case] = {
    "append_scratchpad": _w(lambda v, s: memory(v).append_scratchpad("another")),
    "clear": _w(lambda v, s: memory(v).clear(), lambda r, s: r > 0),
    "clear_scratchpad": _w(lambda v, s: memory(v).clear_scratchpad(), lambda r, s: r == 1),
    "create_checkpoint": _w(lambda v, s: memory(v).create_checkpoint("again")),
    "delete": _w(lambda v, s: memory(v).delete("k"), lambda r, s: r is True),
    "delete_checkpoint": _w(
        lambda v, s: memory(v).delete_checkpoint(s.checkpoint), lambda r, s: r is True
    ),
    "exists": _r(lambda v, s: memory(v).exists("k"), lambda r, s: r is True),
    "get": _r(lambda v, s: memory(v).get("k"), lambda r, s: r == 1),
    "get_all": _r(lambda v, s: memory(v).get_all(), lambda r, s: r == {"k": 1, "short": 2}),
    "get_scratchpad": _r(lambda v, s: memory(v).get_scratchpad(), lambda r, s: r == ["a note"]),
    "get_scratchpad_with_timestamps": _r(
        lambda v, s: memory(v).get_scratchpad_with_timestamps(), lambda r, s: len(r) == 1
    ),
    "get_stats": _r(lambda v, s: memory(v).get_stats()),
    "get_task_state": _r(lambda v, s: memory(v).get_task_state(), lambda r, s: r.task_id == "task"),
    "is_healthy": _r(lambda v, s: memory(v).is_healthy(), lambda r, s: r is True),
    "list_checkpoints": _r(lambda v, s: memory(v).list_checkpoints(), lambda r, s: len(r) == 1),
    "list_keys": _r(lambda v, s: memory(v).list_keys(), lambda r, s: sorted(r) == ["k", "short"]),
    "parent": _r(lambda v, s: memory(v).parent(), lambda r, s: isinstance(r, WorkingMemory)),
    "restore_checkpoint": _w(lambda v, s: _set_then_restore(memory(v), s), lambda r, s: r == 1),
    "scope": _r(lambda v, s: memory(v).scope, lambda r, s: r.parent is not None),
    "set": _w(lambda v, s: memory(v).set("k", 2)),
    "set_task_state": _w(lambda v, s: memory(v).set_task_state(TaskState(task_id="other"))),
    "update_task_progress": _w(
        lambda v, s: memory(v).update_task_progress(current_step=2),
        lambda r, s: r.current_step == 2,
    ),
    "user_id": _r(lambda v, s: memory(v).user_id, lambda r, s: r == USER),
}


async def _set_then_restore(wm: WorkingMemory, seeded: Seeded) -> Any:
    # Restoring the state the checkpoint holds changes nothing but the times.
    seeded.clock.advance(seconds=1)
    await wm.set("k", 99)
    await wm.restore_checkpoint(seeded.checkpoint)
    return await wm.get("k")


CASES: dict[str, Case] = {
    **_STORE,
    **{f"threads.{name}": case for name, case in _THREADS.items()},
    **{f"working_memory().{name}": case for name, case in _WORKING_MEMORY.items()},
}
# Public names that are not a call on a bound store, and why.
NOT_CALLED = {"open": "a constructor of a new store: a bound store is made by bind()"}


def public_names() -> set[str]:
    """Every public attribute of the bound store's class, threads' and working memory's."""
    from memstore.services.threads import ThreadBuffer

    def public(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")}

    return (
        public(MemoryStore)
        | {f"threads.{n}" for n in public(ThreadBuffer)}
        | {f"working_memory().{n}" for n in public(WorkingMemory)}
    )
