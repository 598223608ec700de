"""The MCP server's tools: the agent memory tools plus ``remember`` and ``get_context``.

``search_memory``, ``load_memory`` and ``remember_fact`` are the agent tool layer's
own (:mod:`memstore.services.agent.tools`, run through ``store.call_tool``); the two more
an MCP client needs are defined here and validated by the same checker. No
schema has a tenant argument: the tenant is fixed by the server (``--user-id``)
or by the authenticated HTTP request, and extra arguments are refused.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidInput
from memstore.services.agent.arguments import check_arguments
from memstore.services.agent.builder import MAX_CONTEXT_TOKENS
from memstore.services.agent.tools import MIN_SCORE_SCHEMA, TOOL_SCHEMAS
from memstore.types import Episode

if TYPE_CHECKING:
    from memstore.tenant import TenantMemory

__all__ = ["MCP_TOOL_SCHEMAS", "call_mcp_tool", "mcp_tool_definitions"]

_NOT_BLANK = r"\S"

_EXTRA_SCHEMAS: dict[str, dict[str, Any]] = {
    "remember": {
        "description": (
            "Store one conversation turn (what the user said and what you answered) "
            "in long-term memory. Returns the episode id; consolidation later turns "
            "durable statements in it into facts."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "input": {
                    "type": "string",
                    "maxLength": 100_000,
                    "description": "What the user said.",
                },
                "output": {
                    "type": "string",
                    "maxLength": 100_000,
                    "description": "What the assistant answered.",
                },
                "session_id": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "pattern": _NOT_BLANK,
                    "description": "The conversation this turn belongs to.",
                },
            },
            "required": ["input", "output", "session_id"],
            "additionalProperties": False,
        },
    },
    "get_context": {
        "description": (
            "The memory to show the model for this turn, packed into a token budget: "
            "the user's working blocks, this session's recent messages, relevant "
            "facts and episodes. The text shows each item by a short handle (m3); "
            "items maps each handle to the id to pass to load_memory."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "maxLength": 2000,
                    "description": "The user's current message (ranks facts and episodes).",
                },
                "session_id": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "pattern": _NOT_BLANK,
                    "description": "The current conversation (its messages are included).",
                },
                "max_tokens": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_CONTEXT_TOKENS,
                    "description": "Token budget (default 2000).",
                },
                "min_score": MIN_SCORE_SCHEMA,
            },
            "required": [],
            "additionalProperties": False,
        },
    },
}

MCP_TOOL_SCHEMAS: dict[str, dict[str, Any]] = {**TOOL_SCHEMAS, **_EXTRA_SCHEMAS}


def mcp_tool_definitions() -> list[dict[str, Any]]:
    """``name``, ``description``, ``input_schema`` of every tool (fresh copies)."""
    return [
        {
            "name": name,
            "description": spec["description"],
            "input_schema": json.loads(json.dumps(spec["parameters"])),
        }
        for name, spec in MCP_TOOL_SCHEMAS.items()
    ]


async def _remember(memory: TenantMemory, args: dict[str, Any]) -> Any:
    episode_id = await memory.remember(
        Episode(session_id=args["session_id"], input=args["input"], output=args["output"])
    )
    return {"id": f"episode:{episode_id}"}


async def _get_context(memory: TenantMemory, args: dict[str, Any]) -> Any:
    ctx = await memory.context(
        session_id=args.get("session_id"),
        query=args.get("query", ""),
        max_tokens=int(args.get("max_tokens", 2_000)),
        min_score=args.get("min_score"),
    )
    return {
        "text": ctx.render(),
        "items": [
            {"handle": item.handle, "id": item.id, "kind": str(item.kind), "text": item.text}
            for item in ctx.items
        ],
        "used_tokens": ctx.used_tokens,
        "max_tokens": ctx.max_tokens,
        "dropped": list(ctx.dropped),
    }


_EXTRA_HANDLERS = {"remember": _remember, "get_context": _get_context}


async def call_mcp_tool(memory: TenantMemory, name: str, arguments: Any) -> dict[str, Any]:
    """Validate and run one MCP tool call in ``memory``'s tenant; a JSON-ready result."""
    if name in TOOL_SCHEMAS:
        return await memory.call_tool(name, arguments)
    if name not in _EXTRA_HANDLERS:
        raise InvalidInput(f"unknown tool {name!r}; available: {', '.join(MCP_TOOL_SCHEMAS)}")
    args = check_arguments(name, _EXTRA_SCHEMAS[name]["parameters"], arguments)
    result: dict[str, Any] = await _EXTRA_HANDLERS[name](memory, args)
    return result
