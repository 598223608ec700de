"""``SyncMemoryStore``: the MemoryStore API for synchronous code.

Flask views, scripts and notebook cells call the same methods without ``await``.
The store runs on a private event loop in a background thread; each call submits
its coroutine there (``asyncio.run_coroutine_threadsafe``) and waits. So it is
safe from several threads at once (the loop serialises nothing but scheduling;
the database sees concurrent transactions as with the async store) and works
from code that already runs inside an event loop, which ``asyncio.run`` refuses.

The methods are generated from :class:`MemoryStore`, :class:`ThreadBuffer` and
:class:`WorkingMemory` at import time, so the two APIs cannot drift: a method
added to the async store appears here with the same signature.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from memstore.services.threads import ThreadBuffer
from memstore.services.working_memory import WorkingMemory
from memstore.store import MemoryStore

__all__ = ["SyncMemoryStore", "SyncThreadBuffer", "SyncWorkingMemory"]

T = TypeVar("T")


class _LoopThread:
    """A private event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="memstore-sync-loop", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError("this SyncMemoryStore is closed; open a new one")
        if threading.get_ident() == self._thread.ident:
            # Waiting for the loop from the loop's own thread would never return.
            coro.close()
            raise RuntimeError(
                "SyncMemoryStore was called from its own event-loop thread; "
                "use the async MemoryStore (store.async_store) there"
            )
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            # KeyboardInterrupt in the caller: do not leave the call running.
            future.cancel()
            raise

    def stop(self) -> None:
        if self._closed:
            return

        async def drain() -> None:
            await self.loop.shutdown_asyncgens()

        self.run(drain())
        self._closed = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class _SyncProxy:
    """Runs the wrapped async object's methods on the store's loop thread."""

    async_type: ClassVar[type]

    def __init__(self, target: Any, runner: _LoopThread) -> None:
        self._target = target
        self._runner = runner

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, WorkingMemory):
            return SyncWorkingMemory(value, self._runner)
        if isinstance(value, ThreadBuffer):
            return SyncThreadBuffer(value, self._runner)
        return value

    def _iterate(self, agen: AsyncIterator[Any]) -> Iterator[Any]:
        async def next_item() -> Any:
            return await agen.__anext__()

        async def close() -> None:
            aclose = getattr(agen, "aclose", None)
            if aclose is not None:
                await aclose()

        try:
            while True:
                try:
                    item = self._runner.run(next_item())
                except StopAsyncIteration:
                    return
                yield self._wrap(item)
        finally:
            # An abandoned iteration still ends its database transaction.
            if not self._runner.closed:
                self._runner.run(close())


def _sync_method(owner: str, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(func):

        def method(self: _SyncProxy, *args: Any, **kwargs: Any) -> Any:
            bound = getattr(self._target, name)
            return self._wrap(self._runner.run(bound(*args, **kwargs)))

    elif inspect.isasyncgenfunction(func):

        def method(self: _SyncProxy, *args: Any, **kwargs: Any) -> Any:
            return self._iterate(getattr(self._target, name)(*args, **kwargs))

    else:
        # Plain methods may touch loop-bound state (the access tracker schedules
        # its flush task), so they run on the loop thread too.
        def method(self: _SyncProxy, *args: Any, **kwargs: Any) -> Any:
            bound = getattr(self._target, name)

            async def call() -> Any:
                return bound(*args, **kwargs)

            return self._wrap(self._runner.run(call()))

    functools.update_wrapper(method, func)
    method.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
    del method.__wrapped__  # type: ignore[attr-defined]
    method.__qualname__ = f"{owner}.{name}"
    return method


def _sync_property(name: str) -> property:
    def getter(self: _SyncProxy) -> Any:
        return self._wrap(getattr(self._target, name))

    return property(getter, doc=f"The wrapped object's ``{name}``.")


def public_members(cls: type) -> dict[str, Any]:
    """Public methods and properties of ``cls`` (inherited ones included)."""
    members: dict[str, Any] = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        members[name] = inspect.getattr_static(cls, name)
    return members


def _generate(sync_cls: type[_SyncProxy], async_cls: type, skip: frozenset[str]) -> None:
    sync_cls.async_type = async_cls
    for name, member in public_members(async_cls).items():
        if name in skip or name in sync_cls.__dict__:
            continue
        if isinstance(member, property):
            setattr(sync_cls, name, _sync_property(name))
        elif isinstance(member, staticmethod | classmethod):
            continue
        elif callable(member):
            setattr(sync_cls, name, _sync_method(sync_cls.__name__, name, getattr(async_cls, name)))


class SyncThreadBuffer(_SyncProxy):
    """``store.threads`` of a :class:`SyncMemoryStore` (``iterate`` yields slots)."""

    def __getattr__(self, name: str) -> Any:  # generated methods, for type checkers
        raise AttributeError(name)


class SyncWorkingMemory(_SyncProxy):
    """``store.working_memory(...)`` of a :class:`SyncMemoryStore`."""

    def __getattr__(self, name: str) -> Any:  # generated methods, for type checkers
        raise AttributeError(name)


class SyncMemoryStore(_SyncProxy):
    """A :class:`MemoryStore` for synchronous code; open with :meth:`open`.

    ``with SyncMemoryStore.open(url) as store: store.remember(...)`` — the same
    arguments and methods as the async store, without ``await``. Safe to share
    between threads; ``close()`` (or leaving the ``with`` block) closes the store
    and stops its loop thread.
    """

    def __init__(
        self,
        store: MemoryStore,
        runner: _LoopThread,
        opened: AbstractAsyncContextManager[MemoryStore],
    ) -> None:
        super().__init__(store, runner)
        self._opened = opened
        self._close_lock = threading.Lock()
        self._closed = False
        self._threads = SyncThreadBuffer(store.threads, runner)

    @classmethod
    def open(cls, *args: Any, **kwargs: Any) -> SyncMemoryStore:
        """Open a store: the arguments of :meth:`MemoryStore.open`."""
        runner = _LoopThread()
        try:
            opened = MemoryStore.open(*args, **kwargs)
            store = runner.run(opened.__aenter__())
        except BaseException:
            runner.stop()
            raise
        return cls(store, runner, opened)

    @property
    def threads(self) -> SyncThreadBuffer:
        """Thread context buffers (``store.threads`` of the async API)."""
        return self._threads

    @property
    def async_store(self) -> MemoryStore:
        """The wrapped async store; only for use with :meth:`run`."""
        return self._target  # type: ignore[no-any-return]

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine (e.g. on :attr:`async_store`) on the store's loop; its result."""
        return self._runner.run(coro)

    def close(self) -> None:
        """Close the store (flushes access counts, disposes the engine), stop the loop."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._runner.run(self._opened.__aexit__(None, None, None))
        finally:
            self._runner.stop()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> SyncMemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        # Plain attributes of the async store (embedder, rls, block_char_limit, …);
        # methods are generated below.
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._target, name)
        if callable(value):
            raise AttributeError(name)
        return value


_generate(SyncMemoryStore, MemoryStore, skip=frozenset({"open"}))
_generate(SyncThreadBuffer, ThreadBuffer, skip=frozenset())
_generate(SyncWorkingMemory, WorkingMemory, skip=frozenset())
# open() takes exactly MemoryStore.open's arguments (the unbound signature keeps
# ``cls``, which binding strips again).
SyncMemoryStore.open.__func__.__signature__ = inspect.signature(  # type: ignore[attr-defined]
    inspect.getattr_static(MemoryStore, "open").__func__
).replace(return_annotation="SyncMemoryStore")
