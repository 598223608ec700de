"""The MCP server's resources: a tenant's working blocks and threads, by ``memstore://`` URI.

Plain Python (no MCP SDK), so the URI rules are shared by reading
(``resources/read``) and by subscriptions (which URI a change touches) and can
be tested without the extra. Every function takes the tenant the server fixed;
a URI never names one.

- ``memstore://blocks/{name}``: the block's text (``text/plain``).
- ``memstore://threads/{thread_id}``: the thread as JSON (``application/json``):
  its ``length`` and its newest :data:`THREAD_RESOURCE_SLOTS` slots, so that a
  client re-reading a long thread on every update does not fetch all of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote

from memstore.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from memstore.tenant import TenantMemory
    from memstore.types import Slot

__all__ = [
    "BLOCK_URI_PREFIX",
    "THREAD_RESOURCE_SLOTS",
    "THREAD_URI_PREFIX",
    "ResourceRef",
    "block_uri",
    "parse_uri",
    "read_resource_text",
    "thread_uri",
]

BLOCK_URI_PREFIX = "memstore://blocks/"
THREAD_URI_PREFIX = "memstore://threads/"
THREAD_RESOURCE_SLOTS = 100


@dataclass(frozen=True)
class ResourceRef:
    """What a ``memstore://`` URI names inside the tenant: a block or a thread, by key."""

    kind: Literal["block", "thread"]
    key: str


def block_uri(name: str) -> str:
    return BLOCK_URI_PREFIX + quote(name, safe="")


def thread_uri(thread_id: str) -> str:
    return THREAD_URI_PREFIX + quote(thread_id, safe="")


def parse_uri(uri: str) -> ResourceRef:
    """The block or thread ``uri`` names; :class:`InvalidInput` for any other URI."""
    for prefix, kind in ((BLOCK_URI_PREFIX, "block"), (THREAD_URI_PREFIX, "thread")):
        if uri.startswith(prefix) and len(uri) > len(prefix):
            key = unquote(uri[len(prefix) :])
            if key.strip():
                return ResourceRef(kind, key)  # type: ignore[arg-type]
    raise InvalidInput(
        f"unknown resource {uri!r}; use {BLOCK_URI_PREFIX}<name> or {THREAD_URI_PREFIX}<thread_id>"
    )


def _slot_json(slot: Slot) -> dict[str, Any]:
    meta = slot.metadata
    return {
        "index": meta.slot_index,
        "from_id": meta.from_id,
        "to_id": meta.to_id,
        "timestamp": meta.timestamp.isoformat(),
        "payload_type": meta.payload_type,
        "payload": slot.payload,
    }


async def read_resource_text(memory: TenantMemory, uri: str) -> tuple[str, str]:
    """``(mime type, text)`` of the tenant's resource at ``uri``; NotFound if it has none."""
    ref = parse_uri(uri)
    if ref.kind == "block":
        for block in await memory.working():
            if block.name == ref.key:
                return "text/plain", block.content
        raise NotFound(f"no working block {ref.key!r} for this user")
    info = await memory.threads.thread_info(ref.key)
    if info is None:
        raise NotFound(f"no thread {ref.key!r} for this user")
    slots = await memory.threads.get_slice(ref.key, -THREAD_RESOURCE_SLOTS)
    # Two reads: an append between them makes the slice newer than the header.
    length = max(info.slot_count, slots[-1].index + 1 if slots else 0)
    body = {
        "thread_id": ref.key,
        "length": length,
        "slots": [_slot_json(s) for s in slots],
    }
    return "application/json", json.dumps(body)
