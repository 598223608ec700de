"""Checking a tool call's arguments against its JSON schema, for every tool layer.

A small built-in checker of the subset of JSON Schema the memory tools (and the
MCP server's own tools) use, so each tool refuses bad arguments alike with an
:class:`InvalidInput` that quotes the value safely, and no extra runtime
dependency is needed.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memstore.errors import InvalidInput

__all__ = ["check_arguments", "parse_datetime", "preview"]

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


# Error messages quote untrusted values: bounded in depth and length, so a huge
# or deeply nested value cannot make the message itself fail (RecursionError).
_PREVIEW = reprlib.Repr()
_PREVIEW.maxlevel = 3
_PREVIEW.maxstring = _PREVIEW.maxother = 80


def preview(value: Any) -> str:
    return _PREVIEW.repr(value)


def _type_ok(value: Any, expected: str) -> bool:
    if expected in ("integer", "number") and isinstance(value, bool):
        return False
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[expected])


def parse_datetime(tool: str, field: str, value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{tool}: argument {field!r} must be an ISO 8601 date-time, got {preview(value)}"
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(
            f"{tool}: argument {field!r} needs a UTC offset (e.g. 2026-01-31T09:00:00Z)"
        )
    return parsed


def check_arguments(name: str, schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """Check ``arguments`` (a dict or JSON text) against the JSON ``schema`` of tool ``name``.

    The subset of JSON Schema the memory tools use; other tool layers (the MCP
    server) validate their own schemas with it so every tool refuses alike.
    """
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str | bytes):
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError) as exc:  # too deeply nested for the decoder
            raise InvalidInput(f"{name}: arguments are not valid JSON ({exc})") from None
    if not isinstance(arguments, Mapping):
        raise InvalidInput(
            f"{name}: arguments must be a JSON object, got {type(arguments).__name__}"
        )
    props: Mapping[str, Any] = schema["properties"]
    # key=str: a dict built in Python may mix key types, which do not compare.
    unexpected = sorted(set(arguments) - set(props), key=str)
    if unexpected:
        raise InvalidInput(
            f"{name}: unexpected argument {preview(unexpected[0])}; allowed: {', '.join(props)}"
        )
    for field in schema["required"]:
        if field not in arguments:
            raise InvalidInput(f"{name}: missing required argument {field!r}")
    for field, value in arguments.items():
        rule = props[field]
        if not _type_ok(value, rule["type"]):
            raise InvalidInput(
                f"{name}: argument {field!r} must be of type {rule['type']}, "
                f"got {type(value).__name__} {preview(value)}"
            )
        if "enum" in rule and value not in rule["enum"]:
            raise InvalidInput(
                f"{name}: argument {field!r} must be one of {rule['enum']}, got {preview(value)}"
            )
        if ("minimum" in rule and value < rule["minimum"]) or (
            "maximum" in rule and value > rule["maximum"]
        ):
            raise InvalidInput(
                f"{name}: argument {field!r} must be between {rule.get('minimum')} and "
                f"{rule.get('maximum')}, got {value!r}"
            )
        if rule["type"] == "string":
            if rule.get("minLength") and not value.strip():
                raise InvalidInput(f"{name}: argument {field!r} must not be empty")
            if len(value) > rule.get("maxLength", len(value)):
                raise InvalidInput(
                    f"{name}: argument {field!r} is {len(value)} characters; "
                    f"the limit is {rule['maxLength']}"
                )
            if "pattern" in rule and not re.search(rule["pattern"], value):
                raise InvalidInput(
                    f"{name}: argument {field!r} must look like 'episode:<id>', "
                    f"'fact:<id>', 'block:<name>' or a context's handle 'm<n>', "
                    f"got {preview(value)}"
                )
            if rule.get("format") == "date-time":
                parse_datetime(name, field, value)
    return dict(arguments)
