"""The facade writes each public signature once and hands no service itself."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from dataclasses import fields
from typing import Any, get_type_hints

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from memstore import InvalidInput, MemoryStore
from memstore.core.forwarding import forward, forwards_owned, takes_options
from memstore.store import OpenOptions, StoreConfig
from tests.store_parts import own_engine


def _forwarded() -> dict[str, Any]:
    return {
        name: member
        for name, member in vars(MemoryStore).items()
        if inspect.isfunction(member)
        and not inspect.unwrap(member).__qualname__.startswith("MemoryStore.")
    }


def test_public_methods_are_the_services_own() -> None:
    forwarded = _forwarded()
    assert len(forwarded) >= 37
    for name, method in forwarded.items():
        # The service's method as its class has it (it may take an options object:
        # ``takes_options``), not the implementation below it.
        service_method = method.__wrapped__
        assert service_method.__name__ == name
        assert service_method.__qualname__.split(".")[0].endswith("Service")
        # What a reader (help, docs) or a generator (sync.py) sees is the service's.
        assert inspect.signature(method, eval_str=True) == inspect.signature(
            service_method, eval_str=True
        )
        assert method.__doc__ == service_method.__doc__ and method.__doc__
        assert get_type_hints(method) == get_type_hints(service_method)
        assert inspect.iscoroutinefunction(method) == inspect.iscoroutinefunction(service_method)
        assert inspect.isasyncgenfunction(method) == inspect.isasyncgenfunction(service_method)
        assert method.__qualname__ == f"MemoryStore.{name}"
    hand_written = [
        name
        for name, member in vars(MemoryStore).items()
        if inspect.isfunction(member) and not name.startswith("_") and name not in forwarded
    ]
    assert sorted(hand_written) == ["bind", "langgraph_items", "now", "reads_unrecorded", "tenant"]


def test_open_takes_the_options_fields_once() -> None:
    parameters = inspect.signature(MemoryStore.open, eval_str=True).parameters
    assert list(parameters) == ["url", *(f.name for f in fields(OpenOptions) if f.name != "url")]
    assert {f.name for f in fields(StoreConfig)} < set(parameters)
    assert parameters["url"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert parameters["block_char_limit"].annotation is int
    assert get_type_hints(MemoryStore.open)["return"] == AsyncIterator[MemoryStore]


@pytest.mark.sqlite
async def test_no_service_is_handed_the_facade(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        seen: set[int] = set()

        def reachable(obj: object, depth: int) -> list[object]:
            if depth == 0 or id(obj) in seen or not hasattr(obj, "__dict__"):
                return []
            seen.add(id(obj))
            found = []
            for value in vars(obj).values():
                found.append(value)
                if type(value).__module__.startswith("memstore.services"):
                    found.extend(reachable(value, depth - 1))
            return found

        for name, service in vars(store).items():
            if type(service).__module__.startswith("memstore.services"):
                assert not any(v is store for v in reachable(service, 3)), name


@pytest.mark.sqlite
async def test_bind_and_open_keep_the_options(db_url: str) -> None:
    async with MemoryStore.open(db_url, block_char_limit=7, scratchpad_limit=3) as store:
        assert store.config == StoreConfig(block_char_limit=7, scratchpad_limit=3)
        async with own_engine(db_url) as engine, AsyncSession(engine) as session:
            view = store.bind(session)
            assert view.config is store.config and view.embedder is store.embedder
            # The view's services are the options': the limits hold in its transaction.
            with pytest.raises(InvalidInput):
                await view.update_block("persona", "12345678", user_id="alice")
            assert await view.working(user_id="alice") == []


class _Component:
    def __init__(self) -> None:
        self.closed = False

    async def items(self, n: int, *, step: int = 1) -> AsyncIterator[int]:
        """Count up."""
        try:
            for i in range(0, n, step):
                yield i
        finally:
            self.closed = True

    def plain(self, x: int) -> str:
        return str(x)


@forwards_owned
class _Facade:
    def __init__(self) -> None:
        self.part = _Component()

    items = forward("part", _Component.items)
    plain = forward("part", _Component.plain)


async def test_forwarded_async_iterator_closes_the_components() -> None:
    facade = _Facade()
    items = facade.items(10, step=2)
    assert await items.__anext__() == 0
    await items.aclose()  # type: ignore[attr-defined]
    assert facade.part.closed
    assert facade.plain(3) == "3"
    assert inspect.isasyncgenfunction(_Facade.items) and not inspect.isasyncgenfunction(
        _Facade.plain
    )
    assert _Facade.items.__qualname__ == "_Facade.items"


def test_takes_options_builds_the_options() -> None:
    seen: list[StoreConfig] = []

    @takes_options(StoreConfig)
    def make(first: str, options: StoreConfig) -> str:
        seen.append(options)
        return first

    assert make("a", rls=True) == "a" and seen == [StoreConfig(rls=True)]
    with pytest.raises(TypeError):
        make("a", bogus=1)  # type: ignore[call-arg]
    assert "rls" in inspect.signature(make).parameters


async def test_takes_options_keeps_a_coroutine_function() -> None:
    @takes_options(StoreConfig)
    async def make(first: str, options: StoreConfig) -> bool:
        return options.rls

    # forward() and the sync generator tell an awaitable method by this.
    assert inspect.iscoroutinefunction(make)
    assert await make("a", rls=True) is True
