"""The agent-facing layer: per-turn context packing, memory tools, access tracking."""

from memstore.services.agent.access import ACCESS_PRIOR_WEIGHT, access_prior
from memstore.services.agent.context import Context, ContextItem, ItemKind, pack
from memstore.services.agent.tokens import (
    ApproxTokenCounter,
    CallableTokenCounter,
    CharTokenCounter,
    TokenCounter,
)
from memstore.services.agent.tools import (
    TOOL_SCHEMAS,
    parse_memory_id,
    tool_definitions,
    validate_arguments,
)

__all__ = [
    "ACCESS_PRIOR_WEIGHT",
    "TOOL_SCHEMAS",
    "ApproxTokenCounter",
    "CallableTokenCounter",
    "CharTokenCounter",
    "Context",
    "ContextItem",
    "ItemKind",
    "TokenCounter",
    "access_prior",
    "pack",
    "parse_memory_id",
    "tool_definitions",
    "validate_arguments",
]
