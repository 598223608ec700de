"""The hand-written half of the sync API: the loop thread and the proxies' base classes.

The typed methods are in ``_generated.py`` (written by ``scripts/gen_sync.py``); they
only forward to the helpers here, so every call takes the same path: built in the
caller's thread, run on the private loop with ``asyncio.run_coroutine_threadsafe``.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Self, TypeVar

__all__ = ["LoopThread", "SyncProxy", "SyncStore", "public_members"]

T = TypeVar("T")
S = TypeVar("S")
A = TypeVar("A")
P = ParamSpec("P")


class LoopThread:
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

    def call(self, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        # Plain methods may touch loop-bound state (the access tracker schedules
        # its flush task), so they run on the loop thread too.
        async def call() -> T:
            return func(*args, **kwargs)

        return self.run(call())

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


class SyncProxy(Generic[A]):
    """Runs the wrapped async object's methods on the store's loop thread."""

    def __init__(self, target: A, runner: LoopThread) -> None:
        self._target = target
        self._runner = runner

    def _optional(self, wrap: Callable[[T, LoopThread], S], value: T | None) -> S | None:
        return None if value is None else wrap(value, self._runner)

    def _iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        async def next_item() -> T:
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
                yield item
        finally:
            # An abandoned iteration still ends its database transaction.
            if not self._runner.closed:
                self._runner.run(close())


class SyncStore(SyncProxy[A]):
    """Opening, closing and the escape hatch to the async store; methods are generated."""

    def __init__(
        self,
        store: A,
        runner: LoopThread,
        opened: AbstractAsyncContextManager[A],
    ) -> None:
        super().__init__(store, runner)
        self._opened = opened
        self._close_lock = threading.Lock()
        self._closed = False

    @classmethod
    def _open(cls, opened: AbstractAsyncContextManager[A]) -> Self:
        runner = LoopThread()
        try:

            async def enter() -> A:
                return await opened.__aenter__()

            store = runner.run(enter())
        except BaseException:
            runner.stop()
            raise
        return cls(store, runner, opened)

    @property
    def async_store(self) -> A:
        """The wrapped async store; only for use with :meth:`run`."""
        return self._target

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine (e.g. on :attr:`async_store`) on the store's loop; its result."""
        return self._runner.run(coro)

    def close(self) -> None:
        """Close the store (flushes access counts, disposes the engine), stop the loop."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True

        async def leave() -> None:
            await self._opened.__aexit__(None, None, None)

        try:
            self._runner.run(leave())
        finally:
            self._runner.stop()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    if not TYPE_CHECKING:
        # Plain attributes of the async store (``config``) at run time. Hidden from
        # type checkers, so that a misspelt method is an error there rather than Any;
        # typed code reads them from ``async_store``.
        def __getattr__(self, name: str) -> Any:
            if name.startswith("_"):
                raise AttributeError(name)
            value = getattr(self._target, name)
            if callable(value):
                raise AttributeError(name)
            return value


def public_members(cls: type) -> dict[str, Any]:
    """Public methods and properties of ``cls`` (inherited ones included)."""
    members: dict[str, Any] = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        members[name] = inspect.getattr_static(cls, name)
    return members


def share_docstrings(sync_cls: type, async_cls: type) -> None:
    """Give each generated method without a docstring its async twin's (for ``help()``)."""
    for name, member in vars(sync_cls).items():
        if callable(member) and not getattr(member, "__doc__", None):
            member.__doc__ = getattr(getattr(async_cls, name, None), "__doc__", None)
