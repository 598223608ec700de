"""SyncMemoryStore: the async API for synchronous code, on both backends."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Iterator

import pytest

from memstore import (
    Conflict,
    Episode,
    Fact,
    InvalidInput,
    MemoryStore,
    NotFound,
    SyncMemoryStore,
    ThreadBuffer,
    WorkingMemory,
)
from memstore.sync import SyncThreadBuffer, SyncWorkingMemory, public_members
from tests.test_sync_generated import _generator


@pytest.fixture
def sync_store(db_url: str) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore.open(db_url) as store:
        yield store


def _params(func: object) -> list[tuple[str, object, object, object]]:
    # Resolved annotations: the generated module writes an alias (Clock) as what it means.
    sig = inspect.signature(func, eval_str=True)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default, p.annotation) for p in sig.parameters.values()]


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"),
    [
        (MemoryStore, SyncMemoryStore),
        (ThreadBuffer, SyncThreadBuffer),
        (WorkingMemory, SyncWorkingMemory),
    ],
)
def test_sync_surface_matches_async_api(async_cls: type, sync_cls: type) -> None:
    # What hands memstore's async adapters an async object (the LangGraph items, a
    # consolidation worker) has no sync twin; the generator's table names it.
    async_only = {
        name
        for spec in _generator().CLASSES
        if spec.source.endswith(f":{async_cls.__name__}")
        for name in spec.async_only
    }
    for name, member in public_members(async_cls).items():
        if name in async_only:
            assert not hasattr(sync_cls, name), name
            continue
        assert hasattr(sync_cls, name), f"{sync_cls.__name__} lacks {name}"
        if isinstance(member, property):
            assert isinstance(inspect.getattr_static(sync_cls, name), property)
            continue
        assert _params(getattr(sync_cls, name)) == _params(getattr(async_cls, name)), name
        sync_fn = getattr(sync_cls, name)
        assert not inspect.iscoroutinefunction(sync_fn), name
        assert not inspect.isasyncgenfunction(sync_fn), name


def test_sync_open_takes_the_same_arguments() -> None:
    assert _params(SyncMemoryStore.open) == _params(MemoryStore.open)


def test_sync_round_trip(sync_store: SyncMemoryStore) -> None:
    store = sync_store
    ep = store.remember(
        Episode(
            session_id="s1", user_id="alice", input="I adopted a cat named Miso", output="Lovely!"
        )
    )
    assert [e.id for e in store.recall("cat Miso", user_id="alice")] == [ep]
    assert store.recall("cat Miso", user_id="bob") == []
    fid = store.add_fact(Fact(user_id="alice", subject="alice", predicate="owns", object="a cat"))
    assert [f.fact_id for f in store.recall_facts("cat", user_id="alice")] == [fid]
    store.update_block("persona", "Be brief.", user_id="alice")
    assert [b.name for b in store.working(user_id="alice")] == ["persona"]
    assert (
        store.call_tool("load_memory", {"id": f"episode:{ep}"}, user_id="alice")["input"]
        == "I adopted a cat named Miso"
    )
    ctx = store.context(user_id="alice", session_id="s2", query="cat", max_tokens=500)
    shown = {item: handle for handle, item in ctx.handles.items()}
    assert f"\n{shown[f'episode:{ep}']} I adopted a cat" in ctx.render()

    slot = store.threads.append("t1", {"q": "hi"}, from_id="u", to_id="a", user_id="alice")
    store.threads.append("t1", "second", from_id="a", to_id="u", user_id="alice")
    assert slot.metadata.slot_index == 0
    assert [s.payload for s in store.threads.iterate("t1", user_id="alice")] == [
        {"q": "hi"},
        "second",
    ]
    assert store.threads.length("t1", user_id="alice") == 2

    wm = store.working_memory(project_id="p", session_id="s1", user_id="alice")
    assert isinstance(wm, SyncWorkingMemory)
    wm.set("plan", {"steps": [1, 2]})
    assert wm.get("plan") == {"steps": [1, 2]}
    assert wm.user_id == "alice"
    parent = wm.parent()
    assert isinstance(parent, SyncWorkingMemory) and parent.get("plan") is None

    tables = {table for table, _ in store.export_stream(user_id="alice")}
    assert {"episodes", "facts", "slots"} <= tables
    assert store.forget(user_id="alice") > 0
    assert store.recall("cat", user_id="alice") == []


def test_sync_errors_are_memstore_errors(sync_store: SyncMemoryStore) -> None:
    with pytest.raises(NotFound):
        sync_store.get_episode("no-such-episode", user_id="alice")
    with pytest.raises(InvalidInput):
        sync_store.remember(Episode(session_id="s1", user_id="alice", input="a\x00b", output=""))
    with pytest.raises(InvalidInput):
        sync_store.call_tool("search_memory", {"query": "x", "user_id": "bob"}, user_id="alice")
    sync_store.update_block("persona", "v1", user_id="alice")
    with pytest.raises(Conflict):
        sync_store.update_block("persona", "v2", user_id="alice", expected_version=7)
    assert sync_store.export(user_id="alice")["tables"]["episodes"] == []


def test_sync_store_from_eight_threads(sync_store: SyncMemoryStore) -> None:
    per_thread = 25
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                sync_store.remember(
                    Episode(
                        session_id=f"s{n}",
                        user_id="alice",
                        input=f"thread {n} turn {i}",
                        output="ok",
                    )
                )
                sync_store.threads.append(
                    "shared", {"n": n, "i": i}, from_id=f"w{n}", to_id="log", user_id="alice"
                )
                sync_store.working_memory(session_id=f"s{n}", user_id="alice").set("last", i)
                sync_store.recall(f"thread {n}", user_id="alice", limit=3)
        except BaseException as exc:  # reported below, with the thread's traceback
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    slots = sync_store.threads.get_thread("shared", user_id="alice")
    assert [s.metadata.slot_index for s in slots] == list(range(8 * per_thread))
    assert sorted((s.payload["n"], s.payload["i"]) for s in slots) == [
        (n, i) for n in range(8) for i in range(per_thread)
    ]
    assert sync_store.profile(user_id="alice").episode_count == 8 * per_thread
    for n in range(8):
        assert (
            sync_store.working_memory(session_id=f"s{n}", user_id="alice").get("last")
            == per_thread - 1
        )


async def test_sync_store_inside_a_running_loop(db_url: str) -> None:
    # A notebook cell: an event loop is already running in this thread.
    asyncio.get_running_loop()
    with SyncMemoryStore.open(db_url) as store:
        ep = store.remember(
            Episode(session_id="nb", user_id="alice", input="notebook cell", output="ran")
        )
        assert store.get_episode(ep, user_id="alice").input == "notebook cell"
        with pytest.raises(NotFound):
            store.get_episode("missing", user_id="alice")


def test_close_stops_the_loop_thread(db_url: str) -> None:
    # Thread objects, not idents: a thread of an earlier test that is exiting right now
    # can hand its ident to the new loop thread.
    before = set(threading.enumerate())
    store = SyncMemoryStore.open(db_url)
    # (aiosqlite also runs a thread per connection: look for ours by name.)
    loop_threads = [
        t for t in threading.enumerate() if t not in before and t.name == "memstore-sync-loop"
    ]
    assert len(loop_threads) == 1
    store.close()
    store.close()  # idempotent
    assert store.closed and not loop_threads[0].is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        store.recall("x", user_id="alice")


def test_open_failure_leaves_no_thread(empty_db_url: str) -> None:
    from memstore import SchemaOutOfDate

    def loop_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "memstore-sync-loop"}

    before = loop_threads()
    with pytest.raises(SchemaOutOfDate):
        # auto_migrate=False: an embedded SQLite store would otherwise migrate itself.
        SyncMemoryStore.open(empty_db_url, auto_migrate=False)
    assert loop_threads() <= before


def test_call_from_the_loop_thread_raises_instead_of_deadlocking(
    sync_store: SyncMemoryStore,
) -> None:
    async def inside() -> str:
        try:
            sync_store.recall("x", user_id="alice")
        except RuntimeError as exc:
            return str(exc)
        return "no error"

    assert "its own event-loop thread" in sync_store.run(inside())


def test_readme_sync_example(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import tempfile
    from pathlib import Path

    from doc_blocks import code_blocks

    (code,) = code_blocks("docs/sync.md", heading="# Synchronous code")
    private = Path(tempfile.mkdtemp(prefix="memstore-sync-readme-"))
    try:
        url = f"sqlite+aiosqlite:///{private / 'readme.db'}"
        monkeypatch.setenv("MEMSTORE_URL", url)
        namespace: dict[str, object] = {}
        exec(compile(code, "docs/sync.md", "exec"), namespace)
        assert [s.payload for s in namespace["slots"]] == [{"q": "hi"}]  # type: ignore[attr-defined]
        with SyncMemoryStore.open(url) as store:
            assert [e.id for e in store.recall("paris", user_id="alice")] == [namespace["ep"]]
    finally:
        shutil.rmtree(private, ignore_errors=True)
