"""ASGI types and loopback names shared by the HTTP front doors (``memstore inspect``, ``mcp``).

Standard library only, so ``memstore mcp`` can check its bind address before the
extra's stack is imported. Hand-written because Starlette has no loopback rule:
``ipaddress`` decides it for all of 127.0.0.0/8 and ::1. The gates themselves are
in :mod:`memstore.web.gate`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send", "host_name", "is_loopback"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host of a ``Host`` header value, without its port (``[::1]`` keeps its brackets)."""
    if header.startswith("["):
        return header.split("]")[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header
