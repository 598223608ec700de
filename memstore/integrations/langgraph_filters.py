"""Pure matching rules of the LangGraph store: value filters and namespace conditions.

Kept free of LangGraph imports so they are testable and typed on their own. The
semantics follow LangGraph's InMemoryStore (which mirrors its Postgres JSONB
queries): a filter maps keys to a value (equality, nested dicts match
recursively) or to a dict of ``$eq/$ne/$gt/$gte/$lt/$lte`` operators.

Numbers compare exactly, as JSON numbers (and Postgres' JSONB ``numeric``) do:
an integer beyond float range such as ``10**400`` is a valid operand and a
valid stored value, greater than every float and than ``10**400 - 1``; no
number is ever converted to a float, so none can overflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memstore.errors import InvalidInput

__all__ = ["OPERATORS", "check_filter", "matches_filter", "matches_path"]

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def check_filter(filter_: object) -> dict[str, Any]:
    """The filter as a dict; InvalidInput for unknown operators or non-numeric ranges."""
    if filter_ is None:
        return {}
    if not isinstance(filter_, Mapping):
        raise InvalidInput(f"filter must be a dict, got {type(filter_).__name__}")
    _check_conditions(filter_)
    return dict(filter_)


def _check_conditions(conditions: Mapping[Any, Any]) -> None:
    for key, wanted in conditions.items():
        if not isinstance(key, str):
            raise InvalidInput(f"filter keys must be strings, got {key!r}")
        if isinstance(wanted, Mapping) and any(
            isinstance(k, str) and k.startswith("$") for k in wanted
        ):
            for op, operand in wanted.items():
                if op not in OPERATORS:
                    raise InvalidInput(
                        f"unsupported filter operator {op!r} on {key!r}; use one of "
                        f"{', '.join(sorted(OPERATORS))}"
                    )
                if op in {"$gt", "$gte", "$lt", "$lte"} and (
                    isinstance(operand, bool)
                    or not isinstance(operand, int | float)
                    or operand != operand  # NaN: no JSON number, nothing is beyond it
                ):
                    raise InvalidInput(f"{op} on {key!r} needs a number, got {operand!r}")
        elif isinstance(wanted, Mapping):
            _check_conditions(wanted)


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value  # Python compares int with float exactly, without converting


def _same(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's, true is not 1 (as in JSONB)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _same(value, operand)
    if op == "$ne":
        return not _same(value, operand)
    # A missing or non-numeric value is outside every range (JSONB comparison
    # of a number with a non-number is false), rather than an error.
    number, bound = _number(value), _number(operand)
    if number is None or bound is None:
        return False
    if op == "$gt":
        return number > bound
    if op == "$gte":
        return number >= bound
    if op == "$lt":
        return number < bound
    return number <= bound


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_apply(value, op, operand) for op, operand in wanted.items())
        if not isinstance(value, Mapping):
            return False
        return all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return _same(value, wanted)


def matches_filter(value: Any, filter_: Mapping[str, Any]) -> bool:
    if not isinstance(value, Mapping):  # only a row from before imports checked values
        return not filter_
    return all(_compare(value.get(key), wanted) for key, wanted in filter_.items())


def matches_path(namespace: Sequence[str], path: Sequence[str], match_type: str) -> bool:
    """Whether ``namespace`` starts (prefix) or ends (suffix) with ``path``; "*" = any label."""
    if len(path) > len(namespace):
        return False
    part = (
        namespace[: len(path)]
        if match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(want == "*" or want == got for want, got in zip(path, part, strict=True))
