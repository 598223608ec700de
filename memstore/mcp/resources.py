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
    "TEMPLATES",
    "THREAD_RESOURCE_SLOTS",
    "THREAD_URI_PREFIX",
    "Listing",
    "ResourceRef",
    "block_uri",
    "list_resources",
    "parse_uri",
    "read_resource_text",
    "thread_uri",
]

BLOCK_URI_PREFIX = "memstore://blocks/"
THREAD_URI_PREFIX = "memstore://threads/"
THREAD_RESOURCE_SLOTS = 100
BLOCK_MIME = "text/plain"
THREAD_MIME = "application/json"


@dataclass(frozen=True)
class Listing:
    """An entry of ``resources/list`` (``uri`` a URI) or of ``resources/templates/list``
    (``uri`` a URI template)."""

    uri: str
    name: str
    mime_type: str
    description: str


TEMPLATES = (
    Listing(
        BLOCK_URI_PREFIX + "{name}",
        "working block",
        BLOCK_MIME,
        "One of the user's pinned working blocks (persona, goals, …).",
    ),
    Listing(
        THREAD_URI_PREFIX + "{thread_id}",
        "thread",
        THREAD_MIME,
        "One of the user's threads: its length and newest slots.",
    ),
)


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


async def list_resources(memory: TenantMemory) -> list[Listing]:
    """The tenant's resources: every working block, then every thread."""
    blocks = await memory.working()
    threads = await memory.threads.list_threads()
    return [
        Listing(
            block_uri(b.name), b.name, BLOCK_MIME, f"working block {b.name!r} (version {b.version})"
        )
        for b in blocks
    ] + [
        Listing(
            thread_uri(t.thread_id),
            t.thread_id,
            THREAD_MIME,
            f"thread {t.thread_id!r} ({t.slot_count} slots)",
        )
        for t in threads
    ]


def _slot_json(slot: Slot) -> dict[str, Any]:
    return {
        "index": slot.index,
        "from_id": slot.from_id,
        "to_id": slot.to_id,
        "timestamp": slot.timestamp.isoformat(),
        "payload_type": slot.payload_type,
        "payload": slot.payload,
    }


async def read_resource_text(memory: TenantMemory, uri: str) -> tuple[str, str]:
    """``(mime type, text)`` of the tenant's resource at ``uri``; NotFound if it has none."""
    ref = parse_uri(uri)
    if ref.kind == "block":
        for block in await memory.working():
            if block.name == ref.key:
                return BLOCK_MIME, block.content
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
    return THREAD_MIME, json.dumps(body)
