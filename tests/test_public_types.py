"""The public value types live in one package, ``memstore.types``, at the bottom of the layers.

A reader finds every plain dataclass and enum that ``memstore`` exports in one
place (its modules group them by subject; ``memstore.types`` exports them all);
the package imports nothing but the standard library (and ``memstore.errors``),
so every layer may use it.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import sys
from pathlib import Path

import memstore
import memstore.types

TYPES_DIR = Path(memstore.__file__).parent / "types"
# Context and ContextItem render themselves by the packer's budget rules, so
# they stay with the packer (memstore/services/agent/context.py); ModelSpec reads
# and checks the one definition of the model options (memstore/core/model_spec.py).
WITH_BEHAVIOUR = {"Context", "ContextItem", "ModelSpec"}


def _value_types() -> dict[str, type]:
    found = {}
    for name in memstore.__all__:
        obj = getattr(memstore, name)
        if isinstance(obj, type) and (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum)):
            found[name] = obj
    return found


def test_every_exported_value_type_is_defined_in_memstore_types() -> None:
    types = _value_types()
    assert {"Slot", "TaskState", "AssertOutcome", "GcReport", "ConsolidationResult"} <= set(types)
    elsewhere = {
        name: cls.__module__
        for name, cls in types.items()
        if name not in WITH_BEHAVIOUR and not cls.__module__.startswith("memstore.types.")
    }
    assert elsewhere == {}
    assert all(
        getattr(memstore.types, name) is cls
        for name, cls in types.items()
        if name not in WITH_BEHAVIOUR
    )


def test_memstore_types_imports_only_the_standard_library() -> None:
    modules = sorted(TYPES_DIR.glob("*.py"))
    assert len(modules) > 1
    imported = set()
    nodes = [n for m in modules for n in ast.walk(ast.parse(m.read_text(encoding="utf-8")))]
    for node in nodes:
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    foreign = {
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names
        and name not in ("__future__", "memstore.errors")
        and not name.startswith("memstore.types.")
    }
    assert foreign == set()
