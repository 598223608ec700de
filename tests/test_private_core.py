"""A private core: the facade shows its documented API only, nothing outside it reaches
its parts, and every service is built one way.

``FACADE_API`` is the allow-list of the facade's public names; the API reference renders
each of them (tests/test_api_reference.py), so a new public attribute is either
documented there and added here, or made private.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import fields, is_dataclass
from pathlib import Path

from memstore import MemoryStore
from memstore.services.base import Service
from memstore.services.thread_watch import ThreadWatch
from memstore.services.threads import ThreadBuffer
from memstore.sync import public_members

ROOT = Path(__file__).resolve().parents[1]

# Instance attributes: the options and the thread buffers.
FACADE_ATTRIBUTES = frozenset({"config", "threads"})
# Read-only properties and hand-written methods.
FACADE_OWN = frozenset(
    {
        *("backend", "bind", "embedder", "langgraph_items", "loop", "now", "open"),
        *("reads_unrecorded", "tenant"),
    }
)
# The services' methods it forwards.
FACADE_FORWARDED = frozenset(
    {
        *("remember", "remember_many", "get_episode", "recall", "recall_scored"),
        *("session_messages", "assert_fact", "add_fact", "retract_fact", "fact_history"),
        *("facts", "recall_facts", "recall_facts_scored", "update_block", "append_block"),
        *("working", "block_history", "delete_block", "working_memory", "gc", "consolidate"),
        *("gc_all_tenants", "consolidate_all_tenants"),
        *("consolidator", "profile", "list_tenants_cross_tenant", "snapshot", "forget"),
        *("export_header", "export_stream", "export", "import_", "import_rows", "context"),
        *("tool_definitions", "call_tool", "prefetch", "changes", "change_position"),
        *("record_access", "flush_access", "access_counts", "access_stats"),
    }
)
FACADE_API = FACADE_ATTRIBUTES | FACADE_OWN | FACADE_FORWARDED

# What the facade's components were called when they were public.
FORMER_COMPONENTS = frozenset(
    {
        *("db", "engine", "search", "recall_engine", "access_tracker", "embedder_guard"),
        *("embedder_identity", "rls", "block_char_limit", "scratchpad_limit"),
        "allow_embedder_change",
    }
)
# Names a MemoryStore goes by in the code that holds one.
STORE_NAMES = frozenset({"store", "_store", "view", "bound", "mstore", "worker", "app"})
SCANNED = ("memstore", "tests", "scripts", "examples")


async def test_the_facade_shows_its_documented_api_only(store: MemoryStore) -> None:
    shown = {name for name in vars(store) if not name.startswith("_")}
    shown |= set(public_members(MemoryStore))
    assert shown - FACADE_API == set(), "public but not in the documented API"
    assert FACADE_API - shown == set(), "documented but missing"


def _reaches(path: Path, private: frozenset[str]) -> list[str]:
    """``x._part`` (a private name of the facade) on anything but ``self``/``cls``, and
    ``store.part`` (a former component) on a name a store goes by."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        receiver = node.value
        name = receiver.id if isinstance(receiver, ast.Name) else getattr(receiver, "attr", "")
        if node.attr in private and name not in ("self", "cls"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}.{node.attr}")
        elif node.attr in FORMER_COMPONENTS and name in STORE_NAMES:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}.{node.attr}")
    return found


async def test_nothing_outside_the_facade_reaches_its_parts(store: MemoryStore) -> None:
    private = frozenset(n for n in vars(store) if n.startswith("_") and not n.startswith("__"))
    assert private, "the facade keeps its components somewhere"
    reached = [
        hit
        for top in SCANNED
        for path in sorted((ROOT / top).rglob("*.py"))
        if path != ROOT / "memstore" / "store.py"
        for hit in _reaches(path, private)
    ]
    assert reached == []


def _service_classes() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in sorted((ROOT / "memstore" / "services").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and (
                node.name.endswith("Service") or node.name in ("LangGraphItems", "ThreadWatch")
            ):
                found.append((str(path.relative_to(ROOT)), node))
    return found


def test_every_service_is_built_one_way() -> None:
    """A frozen dataclass of its collaborators on the Service base, no __init__ of its own."""
    classes = _service_classes()
    assert len(classes) >= 11
    odd = [
        f"{where}: {node.name}"
        for where, node in classes
        if node.name != "Service"
        and (
            "Service" not in {getattr(b, "id", "") for b in node.bases}
            or any(
                isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in node.body
            )
        )
    ]
    assert odd == []


async def test_the_facades_services_are_services(store: MemoryStore) -> None:
    wired = {
        name: part
        for name, part in vars(store).items()
        if type(part).__module__.startswith("memstore.services")
    }
    assert len(wired) >= 11
    for name, part in wired.items():
        if isinstance(part, ThreadBuffer):
            continue  # the public thread buffers: a handle that forwards to services
        if type(part).__name__ == "AccessTracker":
            continue  # the access buffer: state, not a service
        assert isinstance(part, Service), name
        assert is_dataclass(part) and all(f.kw_only for f in fields(part)), name
    assert isinstance(store.langgraph_items(), Service)


def test_the_thread_buffer_is_composed_not_inherited() -> None:
    assert not issubclass(ThreadBuffer, ThreadWatch)
    assert ThreadBuffer.__mro__ == (ThreadBuffer, object)
    for name in ("wait", "follow"):
        method = getattr(ThreadBuffer, name)
        assert inspect.unwrap(method) is getattr(ThreadWatch, name)
        assert method.__qualname__ == f"ThreadBuffer.{name}"
