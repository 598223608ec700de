"""Memory tools for function calling: JSON-schema definitions and their dispatcher.

The definitions are plain data in the shape OpenAI-compatible chat completions
(``tools=[{"type": "function", "function": {...}}]``) and Anthropic-style APIs
(``{"name", "description", "input_schema"}``) accept. Arguments are validated
against the very same schemas (:mod:`memstore.services.agent.arguments`), so
schema and validation cannot drift.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Literal

from memstore.core.validation import check_aware
from memstore.errors import InvalidInput, NotFound
from memstore.services.agent.arguments import check_arguments, parse_datetime, preview
from memstore.services.agent.builder import episode_text, fact_text
from memstore.services.agent.context import Context
from memstore.services.agent.memory import AgentMemory
from memstore.services.agent.ranking import merge_by_score
from memstore.types import Fact

__all__ = [
    "HANDLE_PATTERN",
    "ID_PATTERN",
    "MIN_SCORE_SCHEMA",
    "TOOL_SCHEMAS",
    "ToolStyle",
    "call_tool",
    "parse_memory_id",
    "tool_definitions",
    "validate_arguments",
]

ToolStyle = Literal["openai", "anthropic"]
ID_PATTERN = r"^(episode|fact|block):\S.*$"
# A handle of one packed context (``m3``): resolved through that Context.
HANDLE_PATTERN = r"^m[1-9][0-9]{0,5}$"
MAX_SEARCH_LIMIT = 20
_NOT_BLANK = r"\S"
# Shared with the MCP server's get_context, so both describe the floor alike.
MIN_SCORE_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": (
        "Leave out results less relevant than this (0 to 1; 0.35 drops what is "
        "unrelated to the query). Without it the best matches come back even when "
        "nothing matches well."
    ),
}

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "search_memory": {
        "description": (
            "Search the user's long-term memory. Returns matching past episodes "
            "(conversation turns) and/or facts, best matches first, each with an id "
            "you can cite or pass to load_memory and a score: its relevance to the "
            "query, from 0 (unrelated) to 1."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "pattern": _NOT_BLANK,
                    "description": "What to look for, in natural language or keywords.",
                },
                "kind": {
                    "type": "string",
                    "enum": ["all", "episodes", "facts"],
                    "description": "Which memory to search (default: all).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": "Maximum results per kind (default: 5).",
                },
                "min_score": MIN_SCORE_SCHEMA,
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    "load_memory": {
        "description": (
            "Load one memory item in full by its handle, the m3 its line in the "
            "memory context starts with (a line ending in '[…]' was cut short), "
            "or by its id ('episode:<uuid>', 'fact:<uuid>' or 'block:<name>', as "
            "search_memory returns them)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": f"({ID_PATTERN})|({HANDLE_PATTERN})",
                    "maxLength": 300,
                    "description": "The item's handle (m3) or id.",
                },
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    },
    "remember_fact": {
        "description": (
            "Store a durable fact about the user or the world as "
            "(subject, predicate, object), e.g. ('alice', 'lives_in', 'Paris'). "
            "A new value of a single-valued predicate replaces the old one."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "subject": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "pattern": _NOT_BLANK,
                },
                "predicate": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "pattern": _NOT_BLANK,
                    "description": "A short relation name such as lives_in or likes.",
                },
                "object": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "pattern": _NOT_BLANK,
                },
                "confidence": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "How sure you are (default 1).",
                },
                "valid_from": {
                    "type": "string",
                    "format": "date-time",
                    "description": "ISO 8601 time with offset from which it is true "
                    "(default: now).",
                },
            },
            "required": ["subject", "predicate", "object"],
            "additionalProperties": False,
        },
    },
}


def tool_definitions(style: ToolStyle = "openai") -> list[dict[str, Any]]:
    """The memory tools in ``style``'s format (fresh copies; safe to modify)."""
    out: list[dict[str, Any]] = []
    for name, spec in TOOL_SCHEMAS.items():
        schema = json.loads(json.dumps(spec["parameters"]))
        if style == "openai":
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": spec["description"],
                        "parameters": schema,
                    },
                }
            )
        elif style == "anthropic":
            out.append({"name": name, "description": spec["description"], "input_schema": schema})
        else:
            raise InvalidInput(f"unknown tool style {style!r}; use 'openai' or 'anthropic'")
    return out


def validate_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """Check ``arguments`` (a dict or the JSON text a model sent) against tool ``name``."""
    # The name comes from the model too: it may be a list or dict (unhashable).
    if not isinstance(name, str) or name not in TOOL_SCHEMAS:
        raise InvalidInput(f"unknown tool {preview(name)}; available: {', '.join(TOOL_SCHEMAS)}")
    return check_arguments(name, TOOL_SCHEMAS[name]["parameters"], arguments)


def parse_memory_id(memory_id: str) -> tuple[str, str]:
    """Split ``kind:key``; InvalidInput for anything else."""
    if not isinstance(memory_id, str) or not re.match(ID_PATTERN, memory_id):
        raise InvalidInput(
            f"memory id must look like 'episode:<id>', 'fact:<id>' or 'block:<name>', "
            f"got {preview(memory_id)}"
        )
    kind, key = memory_id.split(":", 1)
    return kind, key


# ---- execution ----------------------------------------------------------------------


def _episode_json(episode: Any) -> dict[str, Any]:
    return {
        "id": f"episode:{episode.id}",
        "kind": "episode",
        "session_id": episode.session_id,
        "occurred_at": episode.occurred_at.isoformat(),
        "input": episode.input,
        "output": episode.output,
        "tool_calls": episode.tool_calls,
        "metadata": episode.metadata,
    }


def _fact_json(fact: Fact) -> dict[str, Any]:
    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "id": f"fact:{fact.fact_id}",
        "kind": "fact",
        "subject": fact.subject,
        "predicate": fact.predicate,
        "object": fact.object,
        "confidence": fact.confidence,
        "valid_from": iso(fact.valid_from),
        "valid_to": iso(fact.valid_to),
        "recorded_at": iso(fact.recorded_at),
        "current": fact.superseded_at is None,
        "sources": [f"episode:{s}" for s in fact.sources],
        "text": fact_text(fact),
    }


async def _search(
    memory: AgentMemory, user_id: str | None, args: dict[str, Any], context: Context | None
) -> Any:
    kind = args.get("kind", "all")
    limit = int(args.get("limit", 5))
    min_score = args.get("min_score")
    facts: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    if kind in ("all", "facts"):
        for fact_match in await memory.facts.recall_facts_scored(
            args["query"], user_id=user_id, limit=limit, min_score=min_score
        ):
            fact = fact_match.fact
            facts.append(
                {
                    "id": f"fact:{fact.fact_id}",
                    "kind": "fact",
                    "score": round(fact_match.score, 4),
                    "text": fact_text(fact),
                }
            )
    if kind in ("all", "episodes"):
        for match in await memory.episodes.recall_scored(
            args["query"], user_id=user_id, limit=limit, min_score=min_score
        ):
            episodes.append(
                {
                    "id": f"episode:{match.episode.id}",
                    "kind": "episode",
                    "score": round(match.score, 4),
                    "text": episode_text(match.episode),
                }
            )
    # Both kinds score relevance on one scale: merged by it, each in its own ranking's order.
    return {"results": merge_by_score([facts, episodes], lambda r: float(r["score"]))}


def _resolve(ref: str, context: Context | None) -> str:
    """A handle's id in ``context``; an id as it is."""
    if not re.match(HANDLE_PATTERN, ref):
        return ref
    if context is None:
        raise InvalidInput(
            f"{ref!r} is a handle of one packed context, which this call was not given: "
            f"load the item by its id (the context maps each handle to one), or pass the "
            f"context to call_tool(..., context=ctx)"
        )
    return context.resolve(ref)


async def _load(
    memory: AgentMemory, user_id: str | None, args: dict[str, Any], context: Context | None
) -> Any:
    kind, key = parse_memory_id(_resolve(args["id"], context))
    if kind == "episode":
        # get_episode filters by tenant: another tenant's id is simply not found.
        return _episode_json(await memory.episodes.get_episode(key, user_id=user_id))
    if kind == "fact":
        versions = await memory.facts.fact_history(user_id=user_id, fact_id=key)
        if not versions:
            raise NotFound(f"no fact {key!r} for this user")
        now = memory.now()
        current = [
            v
            for v in versions
            if v.superseded_at is None
            and (v.valid_from is None or v.valid_from <= now)
            and (v.valid_to is None or now < v.valid_to)
        ]
        chosen = current[-1] if current else versions[-1]
        memory.access.record_access("fact", [key], user_id=user_id)
        return {**_fact_json(chosen), "versions": len(versions)}
    for block in await memory.blocks.working(user_id=user_id):
        if block.name == key:
            memory.access.record_access("block", [key], user_id=user_id)
            return {
                "id": f"block:{block.name}",
                "kind": "block",
                "name": block.name,
                "content": block.content,
                "version": block.version,
                "updated_at": block.updated_at.isoformat(),
            }
    raise NotFound(f"no block {key!r} for this user")


async def _remember(
    memory: AgentMemory, user_id: str | None, args: dict[str, Any], context: Context | None
) -> Any:
    valid_from = None
    if "valid_from" in args:
        valid_from = check_aware(
            "valid_from", parse_datetime("remember_fact", "valid_from", args["valid_from"])
        )
    outcome = await memory.facts.assert_fact(
        Fact(
            user_id=user_id,
            subject=args["subject"],
            predicate=args["predicate"],
            object=args["object"],
            confidence=float(args.get("confidence", 1.0)),
            valid_from=valid_from,
        )
    )
    return {"id": f"fact:{outcome.fact_id}", "change": str(outcome.change)}


_HANDLERS = {"search_memory": _search, "load_memory": _load, "remember_fact": _remember}


async def call_tool(
    memory: AgentMemory,
    name: str,
    arguments: Any,
    *,
    user_id: str | None,
    context: Context | None = None,
) -> dict[str, Any]:
    """Validate and run one tool call inside ``user_id``'s tenant; JSON-ready result.

    ``context`` is the context the model was shown: ``load_memory`` then takes
    its handles (``m3``) as well as ids.
    """
    args = validate_arguments(name, arguments)
    result: dict[str, Any] = await _HANDLERS[name](memory, user_id, args, context)
    return result
