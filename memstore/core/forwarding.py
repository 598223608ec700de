"""Writing a public signature once: typed forwarding to a component's method.

A facade that repeats each method of the components it composes writes every
signature twice and lets the copies drift. :func:`forward` makes the facade's
method out of the component's own function instead: type checkers see the
component method's parameters (``ParamSpec``), and at run time it is a real
function of the same kind (coroutine, async generator or plain) whose
``inspect.signature``, annotations and docstring are the component's.
:func:`takes_options` does the same for a constructor taking an options
object: the options class's fields become its keyword parameters.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

__all__ = ["forward", "forwards_owned", "takes_options"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")
O = TypeVar("O")  # noqa: E741 - the options type
C = TypeVar("C", bound=type)

_FORWARDED = "__memstore_forwarded__"


def forward(attr: str, method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[Any, P], R]:
    """A method that calls ``method`` on the object's ``attr`` (a component).

    ``method`` is the component class's function (``EpisodeService.remember``),
    so the name of the method is checked where it is written.
    """
    impl: Callable[..., Any] = method
    call: Callable[..., Any]
    if inspect.iscoroutinefunction(method):

        async def call_async(self: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await impl(getattr(self, attr), *args, **kwargs)

        call = call_async
    elif inspect.isasyncgenfunction(method):

        async def call_gen(self: Any, /, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            # Closing the caller's iterator closes the component's (its transaction).
            async with aclosing(impl(getattr(self, attr), *args, **kwargs)) as items:
                async for item in items:
                    yield item

        call = call_gen
    else:

        def call_plain(self: Any, /, *args: Any, **kwargs: Any) -> Any:
            return impl(getattr(self, attr), *args, **kwargs)

        call = call_plain
    # The signature, annotations (resolved in the component's module, through
    # ``__wrapped__``) and docstring are the component's.
    functools.update_wrapper(call, method)
    setattr(call, _FORWARDED, True)
    return cast("Callable[Concatenate[Any, P], R]", call)


def forwards_owned(cls: C) -> C:
    """Class decorator: the forwarded methods of ``cls`` are named as its own."""
    for name, member in vars(cls).items():
        if getattr(member, _FORWARDED, False):
            member.__qualname__ = f"{cls.__qualname__}.{name}"
            member.__module__ = cls.__module__
    return cls


def takes_options(
    options: Callable[P, O],
) -> Callable[[Callable[[T, O], R]], Callable[Concatenate[T, P], R]]:
    """Decorate ``impl(first, opts)`` to take ``options``' parameters instead of ``opts``.

    ``options`` is typically a frozen dataclass: its fields are written once and
    become the parameters of the decorated function (for type checkers and for
    ``inspect.signature``), so methods that take the same arguments share them.
    A coroutine function stays one.
    """
    parameters = list(inspect.signature(options, eval_str=True).parameters.values())

    def decorate(impl: Callable[[T, O], R]) -> Callable[Concatenate[T, P], R]:
        run: Callable[..., Any] = impl
        call: Callable[..., Any]
        if inspect.iscoroutinefunction(impl):

            async def call_async(first: Any, /, *args: Any, **kwargs: Any) -> Any:
                return await run(first, options(*args, **kwargs))

            call = call_async
        else:

            def call_plain(first: Any, /, *args: Any, **kwargs: Any) -> Any:
                return run(first, options(*args, **kwargs))

            call = call_plain
        # ``__wrapped__`` stays: ``typing.get_type_hints`` resolves the return
        # annotation in ``impl``'s module; ``inspect.signature`` stops at ours.
        functools.update_wrapper(call, impl)
        try:
            own = inspect.signature(impl, eval_str=True)
        except NameError:
            # A method of a class that is not defined yet (``open`` returns its own
            # class): its return annotation stays a string, resolved through ``__wrapped__``.
            own = inspect.signature(impl)
        first = next(iter(own.parameters.values()))
        signature = own.replace(parameters=[first, *parameters])
        call.__signature__ = signature  # type: ignore[union-attr]
        call.__annotations__ = {
            **{p.name: p.annotation for p in parameters},
            "return": own.return_annotation,
        }
        return cast("Callable[Concatenate[T, P], R]", call)

    return decorate
