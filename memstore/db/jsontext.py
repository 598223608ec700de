"""JSON text whose numbers survive PostgreSQL ``jsonb`` unchanged.

``jsonb`` stores numbers as ``numeric`` and prints them without exponent, so a
float written as ``1e+16`` comes back as the integer ``10000000000000000`` and
``1e308`` as an integer that is not even equal to it. Writing every float in
positional notation with a decimal point keeps it a float of the same value.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

__all__ = ["dumps"]

_encode_str = json.JSONEncoder(ensure_ascii=False).encode


def _float(value: float) -> str:
    text = repr(value)
    if text in ("nan", "inf", "-inf"):
        raise ValueError(f"out of range float value {text} is not JSON compliant")
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if "." not in text:
        text += ".0"
    return text


def _parts(value: Any, out: list[str]) -> None:
    # Iterative enough for validated documents (depth is capped by check_json).
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_str(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            if i:
                out.append(",")
            out.append(_encode_str(key))
            out.append(":")
            _parts(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _parts(item, out)
        out.append("]")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """Strict JSON (no NaN/Infinity) with floats in exponent-free form."""
    out: list[str] = []
    _parts(value, out)
    return "".join(out)
