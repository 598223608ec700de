"""The public value types live in one module, ``memstore.types``, at the bottom of the layers.

A reader finds every plain dataclass and enum that ``memstore`` exports in one
place; ``memstore.types`` imports nothing but the standard library (and
``memstore.errors``), so every layer may use it.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import sys
from pathlib import Path

import memstore

TYPES_PY = Path(memstore.__file__).parent / "types.py"
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
        if name not in WITH_BEHAVIOUR and cls.__module__ != "memstore.types"
    }
    assert elsewhere == {}


def test_memstore_types_imports_only_the_standard_library() -> None:
    tree = ast.parse(TYPES_PY.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    foreign = {
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names
        and name not in ("__future__", "memstore.errors")
    }
    assert foreign == set()
