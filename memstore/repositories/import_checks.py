"""Validation of imported rows: the same rules as the write API, per column.

An exported row is JSON; each column is checked (and converted back) by its
type (:mod:`memstore.repositories.import_values`), and then by the rule the
write API applies to that column (ids, text limits, confidence range, task
state, checkpoints…). Any failure is an :class:`InvalidImportRow` naming table,
row and column, raised before the import commits, so nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import (
    Table,
)

from memstore.core.langgraph_input import (
    check_index_fields,
    check_key,
    check_stored_namespace,
    check_ttl,
    check_vectors,
)
from memstore.core.scopes import CHECKPOINT_FORMAT
from memstore.core.tenancy import TenantId
from memstore.core.validation import (
    check_identifier,
    check_index_key_bytes,
    check_text,
)
from memstore.errors import InvalidImportRow, InvalidInput
from memstore.repositories.import_values import aware_text, typed_value

__all__ = ["import_record"]

# Same limits as the write path (services.limits, fact_input); repeated here to avoid an
# import cycle with the facade.
_EPISODE_ID_CHARS = 36
_FACT_FIELD_CHARS = 2_000
_ACCESS_KINDS = frozenset({"episode", "fact", "block"})

Rule = Callable[[Any], None]


def _identifier(max_chars: int = 255) -> Rule:
    def rule(value: Any) -> None:
        check_identifier("value", value, max_chars=max_chars)

    return rule


def _text(max_chars: int = 100_000, *, allow_empty: bool = True) -> Rule:
    def rule(value: Any) -> None:
        check_text("value", value, allow_empty=allow_empty, max_chars=max_chars)

    return rule


def _at_least(minimum: int) -> Rule:
    def rule(value: Any) -> None:
        if value is not None and value < minimum:
            raise InvalidInput(f"must be at least {minimum}")

    return rule


def _kind(expected: type, what: str) -> Rule:
    def rule(value: Any) -> None:
        if not isinstance(value, expected):
            raise InvalidInput(f"must be {what}, got {type(value).__name__}")

    return rule


def _stripped(value: Any) -> None:
    if value != value.strip():
        raise InvalidInput("must not start or end with whitespace (the API strips it)")


def _normalised_predicate(value: Any) -> None:
    from memstore.core.predicates import normalize_predicate

    if normalize_predicate(value) != value:
        raise InvalidInput(f"must be normalised like the API's ({normalize_predicate(value)!r})")


def _confidence(value: Any) -> None:
    if not 0.0 <= value <= 1.0:
        raise InvalidInput("must be a number between 0 and 1")


def _sources(value: Any) -> None:
    if not isinstance(value, list):
        raise InvalidInput(f"must be a list of ids, got {type(value).__name__}")
    for source in value:
        check_identifier("a source", source)


def _scope_level(value: Any) -> None:
    if value != "":  # "" marks an absent level
        check_identifier("value", value)


def _one_of(allowed: frozenset[str]) -> Rule:
    def rule(value: Any) -> None:
        if value not in allowed:
            raise InvalidInput(f"must be one of {sorted(allowed)}")

    return rule


def _checkpoint_data(value: Any) -> None:
    if not isinstance(value, dict) or value.get("format") != CHECKPOINT_FORMAT:
        raise InvalidInput(f"must be a checkpoint object with format {CHECKPOINT_FORMAT!r}")
    keys = value.get("keys")
    if not isinstance(keys, list):
        raise InvalidInput("must hold a 'keys' list")
    for item in keys:
        if not isinstance(item, dict) or set(item) != {"key", "value", "expires_at"}:
            raise InvalidInput("each of its keys must be {key, value, expires_at}")
        check_identifier("a checkpoint key", item["key"])
        if item["expires_at"] is not None:
            aware_text("a checkpoint expiry", item["expires_at"])


# The session's next turn is one past its last: that must fit an integer column too.
_MAX_TURN = 2**31 - 2


def _at_most(maximum: int) -> Rule:
    def rule(value: Any) -> None:
        if value is not None and value > maximum:
            raise InvalidInput(f"must be at most {maximum}")

    return rule


def _object(value: Any) -> None:
    if not isinstance(value, dict):
        raise InvalidInput(f"must be a JSON object, got {type(value).__name__}")


def _rule_of(check: Callable[[Any], Any]) -> Rule:
    def rule(value: Any) -> None:
        check(value)

    return rule


# Column rules of the write API, by (table, column); checked after the type.
_RULES: dict[tuple[str, str], list[Rule]] = {
    ("episodes", "id"): [_identifier(_EPISODE_ID_CHARS)],
    ("episodes", "session_id"): [_identifier()],
    ("episodes", "input"): [_text()],
    ("episodes", "output"): [_text()],
    ("episodes", "tool_calls"): [_kind(list, "a list")],
    ("episodes", "metadata"): [_kind(dict, "an object")],
    ("episodes", "search_text"): [_text(300_000)],
    ("episodes", "turn"): [_at_least(0), _at_most(_MAX_TURN)],
    ("facts", "id"): [_identifier(_EPISODE_ID_CHARS)],
    ("facts", "fact_id"): [_identifier(_EPISODE_ID_CHARS)],
    ("facts", "subject"): [_text(_FACT_FIELD_CHARS, allow_empty=False), _stripped],
    ("facts", "object"): [_text(_FACT_FIELD_CHARS, allow_empty=False), _stripped],
    ("facts", "predicate"): [_identifier(), _normalised_predicate],
    ("facts", "confidence"): [_confidence],
    ("facts", "sources"): [_sources],
    ("blocks", "name"): [_identifier()],
    ("blocks", "version"): [_at_least(1)],
    ("blocks", "pinned_order"): [_at_least(0)],
    ("block_versions", "name"): [_identifier()],
    ("block_versions", "version"): [_at_least(1)],
    ("threads", "thread_id"): [_identifier()],
    ("threads", "next_slot_index"): [_at_least(0)],
    ("slots", "thread_id"): [_identifier()],
    ("slots", "slot_index"): [_at_least(0)],
    ("slots", "from_id"): [_identifier()],
    ("slots", "to_id"): [_identifier()],
    ("slots", "payload_type"): [_identifier()],
    ("slots", "own_name"): [_identifier()],
    ("slots", "usage_instructions"): [_text()],
    ("slots", "todo_nudge"): [_text()],
    ("working_memory", "project_id"): [_scope_level],
    ("working_memory", "agent_id"): [_scope_level],
    ("working_memory", "session_id"): [_scope_level],
    ("working_memory", "key"): [_identifier()],
    ("working_memory_checkpoints", "project_id"): [_scope_level],
    ("working_memory_checkpoints", "agent_id"): [_scope_level],
    ("working_memory_checkpoints", "session_id"): [_scope_level],
    ("working_memory_checkpoints", "id"): [_identifier(_EPISODE_ID_CHARS)],
    ("working_memory_checkpoints", "data"): [_checkpoint_data],
    ("working_memory_checkpoints", "description"): [_text(10_000)],
    ("episode_consolidation", "episode_id"): [_identifier(_EPISODE_ID_CHARS)],
    ("access_stats", "kind"): [_one_of(_ACCESS_KINDS)],
    ("access_stats", "item_id"): [_identifier()],
    ("access_stats", "access_count"): [_at_least(0)],
    ("session_turns", "session_id"): [_identifier()],
    ("session_turns", "next_turn"): [_at_least(0)],
    # The LangGraph store's rules (core.langgraph_input), as MemstoreStore.put applies them.
    ("langgraph_items", "namespace"): [_rule_of(check_stored_namespace)],
    ("langgraph_items", "key"): [_rule_of(check_key)],
    ("langgraph_items", "value"): [_object],
    ("langgraph_items", "ttl_minutes"): [_rule_of(check_ttl)],
    ("langgraph_items", "index_fields"): [_rule_of(check_index_fields)],
}
# Rules that need the store's embedding width.
_WIDTH_RULES: dict[tuple[str, str], Callable[[Any, int | None], Any]] = {
    ("langgraph_items", "vectors"): check_vectors,
}


def _check_row(table: str, record: dict[str, Any]) -> tuple[str, str] | None:
    """Rules across columns of one row; returns (column, cause) of the first failure."""
    if (
        table == "facts"
        and record.get("valid_to") is not None
        and (record["valid_to"] <= record["valid_from"])
    ):
        return "valid_to", "must be later than valid_from"
    if table == "episodes" and not (record["input"].strip() or record["output"].strip()):
        return "input", "an episode needs a non-empty input or output"
    if table in ("working_memory", "working_memory_checkpoints"):
        last = record["key"] if table == "working_memory" else record["id"]
        parts = [
            record["user_id"],
            record["project_id"],
            record["agent_id"],
            record["session_id"],
            last,
        ]
        try:
            check_index_key_bytes("its tenant, scope and key", parts)
        except InvalidInput as exc:
            return "key" if table == "working_memory" else "session_id", str(exc)
    if table == "working_memory":
        return _check_internal_key(record["key"], record["value"])
    if table == "langgraph_items" and (record.get("ttl_minutes") is None) != (
        record.get("expires_at") is None
    ):
        # A put with a TTL sets both, one without neither; a TTL without an expiry
        # would set one on the first read.
        return "expires_at", "must be set exactly when ttl_minutes is"
    return None


def _check_internal_key(key: str, value: Any) -> tuple[str, str] | None:
    from memstore.core.scopes import check_task_state, task_state_from_json

    if not key.startswith("_"):
        return None
    try:
        if key == "_task_state":
            if not isinstance(value, dict):
                raise InvalidInput("a task state must be an object")
            try:
                state = task_state_from_json(value)
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidInput(f"not a task state: {exc!r}") from exc
            check_task_state(state)
        elif key == "_scratchpad":
            if not isinstance(value, list) or not all(
                isinstance(e, dict)
                and isinstance(e.get("content"), str)
                and isinstance(e.get("timestamp"), str)
                for e in value
            ):
                raise InvalidInput("the scratchpad must be a list of {content, timestamp}")
        elif key == "_metadata":
            if not isinstance(value, dict):
                raise InvalidInput("scope metadata must be an object")
        else:
            return "key", f"{key!r}: keys starting with '_' are reserved"
    except InvalidInput as exc:
        return "value", f"{key}: {exc}"
    return None


def import_record(
    table: Table, index: int, row: Any, *, user_id: TenantId, dim: int | None
) -> dict[str, Any]:
    """One exported row of ``table`` (number ``index``, from 0) as insert values.

    Derived columns (``info={"derived": True}``) are recomputed, never taken from
    the dump. Raises :class:`InvalidImportRow` naming table, row and column.
    """
    name = table.name

    def fail(column: str | None, cause: str) -> InvalidImportRow:
        return InvalidImportRow(name, index, column, cause)

    if not isinstance(row, Mapping):
        raise fail(None, "a row must be a JSON object")
    columns = table.c
    unknown = sorted(k for k in row if k not in columns or k == "user_id")
    if unknown:
        raise fail(unknown[0], f"unexpected column(s) {unknown}")
    record: dict[str, Any] = {}
    for column in columns:
        if column.name == "user_id" or column.info.get("derived"):
            continue
        if column.name not in row:
            if column.nullable or column.default is not None or (column.server_default is not None):
                continue
            raise fail(column.name, "is missing")
        value = row[column.name]
        try:
            if value is None:
                if not column.nullable:
                    raise InvalidInput("must not be null")
            else:
                value = typed_value(column, value, dim)
                for rule in _RULES.get((name, column.name), ()):
                    rule(value)
                sized = _WIDTH_RULES.get((name, column.name))
                if sized is not None:
                    sized(value, dim)
        except InvalidInput as exc:
            raise fail(column.name, str(exc)) from exc
        record[column.name] = value
    record["user_id"] = user_id
    problem = _check_row(name, record)
    if problem is not None:
        raise fail(*problem)
    return record
