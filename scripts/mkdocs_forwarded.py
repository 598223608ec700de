"""Griffe extension for the API reference: the facade's methods as the methods they are.

griffe reads source, so three kinds of public method would show wrong on the site:

- a method written ``remember = forward("_episodes", EpisodeService.remember)``
  (memstore.core.forwarding) is an attribute to griffe; it becomes a copy of the
  component's function, with its parameters, return type, docstring and labels;
- a method decorated ``@takes_options(OpenOptions)`` shows ``(options: OpenOptions)``;
  it gets the options' fields as parameters, in the order and kinds of the signature
  Python sees at run time (also where it is forwarded, e.g. ``recall``);
- a method of a generated sync twin (``class SyncMemoryStore(SyncStore[MemoryStore])``)
  has no docstring in source (``share_docstrings`` gives it its async twin's at import);
  it gets the same one here.

mkdocs.yml loads it; tests/test_api_reference.py checks the rendered pages.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe

__all__ = ["ForwardedMethods"]

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
}
# The bases of the generated sync classes (memstore.sync._runtime).
_SYNC_BASES = {"SyncProxy", "SyncStore"}


class ForwardedMethods(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        classes = list(_classes(pkg))
        for cls in classes:
            for name, member in list(cls.members.items()):
                if isinstance(member, griffe.Attribute):
                    target = _forwarded_target(member, loader)
                    if target is not None:
                        # The service's method may take an options object itself.
                        _expand_options(target, loader)
                        cls.set_member(name, _copy_function(target, name, member))
                elif isinstance(member, griffe.Function):
                    _expand_options(member, loader)
        # After the forwards: a sync method takes the docstring of the async one.
        for cls in classes:
            twin = _sync_twin(cls, loader)
            if twin is None:
                continue
            for name, member in cls.members.items():
                if not isinstance(member, griffe.Function) or member.docstring is not None:
                    continue
                source = twin.all_members.get(name)
                if isinstance(source, griffe.Alias):
                    source = source.final_target
                if isinstance(source, griffe.Function) and source.docstring is not None:
                    member.docstring = _docstring(source.docstring, member)


def _classes(obj: griffe.Object) -> Any:
    for member in obj.members.values():
        if isinstance(member, griffe.Alias):
            continue
        if isinstance(member, griffe.Class):
            yield member
        if isinstance(member, griffe.Module | griffe.Class):
            yield from _classes(member)


def _resolve(path: str, loader: griffe.GriffeLoader) -> griffe.Object | None:
    try:
        found = loader.modules_collection[path]
    except KeyError:
        return None
    if isinstance(found, griffe.Alias):
        found = found.final_target
    return found if isinstance(found, griffe.Object) else None


def _forwarded_target(
    attr: griffe.Attribute, loader: griffe.GriffeLoader
) -> griffe.Function | None:
    value = attr.value
    if not isinstance(value, griffe.ExprCall) or str(value.function) != "forward":
        return None
    method = value.arguments[-1]
    if not isinstance(method, griffe.ExprAttribute | griffe.ExprName):
        return None
    target = _resolve(method.canonical_path, loader)
    return target if isinstance(target, griffe.Function) else None


def _docstring(source: griffe.Docstring, parent: griffe.Object) -> griffe.Docstring:
    return griffe.Docstring(
        source.value,
        lineno=source.lineno,
        endlineno=source.endlineno,
        parent=parent,
        parser=source.parser,
        parser_options=source.parser_options,
    )


def _copy_function(target: griffe.Function, name: str, where: griffe.Attribute) -> griffe.Function:
    func = griffe.Function(
        name,
        lineno=where.lineno,
        endlineno=where.endlineno,
        parameters=target.parameters,
        returns=target.returns,
        decorators=target.decorators,
    )
    func.labels = set(target.labels)
    if target.docstring is not None:
        func.docstring = _docstring(target.docstring, func)
    return func


def _expand_options(func: griffe.Function, loader: griffe.GriffeLoader) -> None:
    options = None
    for decorator in func.decorators:
        value = decorator.value
        if isinstance(value, griffe.ExprCall) and str(value.function) == "takes_options":
            arg = value.arguments[0]
            if isinstance(arg, griffe.ExprName | griffe.ExprAttribute):
                options = _resolve(arg.canonical_path, loader)
    if not isinstance(options, griffe.Class):
        return
    # The kinds (a field may leave kw_only) and order of the function Python runs; the
    # annotations and defaults as written on the fields.
    owner = func.parent
    assert owner is not None
    runtime = getattr(importlib.import_module(owner.module.path), owner.name)
    method = getattr(runtime, func.name)
    given = list(inspect.signature(method).parameters.values())
    if not inspect.ismethod(method):  # a plain function's first parameter is its ``self``
        given = given[1:]
    parameters = [next(iter(func.parameters))]
    for p in given:
        field = options.all_members[p.name]
        if isinstance(field, griffe.Alias):  # a field of a base class
            field = field.final_target
        assert isinstance(field, griffe.Attribute)
        default: str | griffe.Expr | None = field.value
        if isinstance(default, griffe.ExprCall):  # field(default=..., kw_only=...)
            default = repr(p.default)
        parameters.append(
            griffe.Parameter(
                p.name, annotation=field.annotation, kind=_KINDS[p.kind], default=default
            )
        )
    func.parameters = griffe.Parameters(*parameters)


def _sync_twin(cls: griffe.Class, loader: griffe.GriffeLoader) -> griffe.Class | None:
    for base in cls.bases:
        if isinstance(base, griffe.ExprSubscript) and str(base.left) in _SYNC_BASES:
            twin_name = base.slice
            if isinstance(twin_name, griffe.ExprName | griffe.ExprAttribute):
                twin = _resolve(twin_name.canonical_path, loader)
                if isinstance(twin, griffe.Class):
                    return twin
    return None
