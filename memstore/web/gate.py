"""Who may call the HTTP front doors (``memstore mcp --transport http``, ``memstore inspect``).

Authentication is Starlette's: each door gives :class:`AuthenticationMiddleware`
an :class:`AuthenticationBackend` and refuses through ``on_error``; headers,
cookies and the query string are read through Starlette's ``HTTPConnection``.
What Starlette does not ship is here, once:

- :class:`LoopbackOnly`, the DNS-rebinding guard of a loopback server. Hand-written
  because ``TrustedHostMiddleware`` matches a fixed list of names (no address range
  such as 127.0.0.0/8), never looks at ``Origin``, and answers 400 where the doors
  answer 421 (wrong host) and 403 (foreign origin).
- :func:`token_matches` and :func:`bearer_token`: a constant-time compare of a
  presented token, which Starlette leaves to the backend.

Needs Starlette (the ``inspect`` and ``mcp`` extras both bring it).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from urllib.parse import urlsplit

from starlette.authentication import AuthenticationError
from starlette.requests import HTTPConnection
from starlette.responses import Response

from memstore.web.asgi import ASGIApp, Receive, Scope, Send, host_name, is_loopback

__all__ = [
    "LoopbackOnly",
    "Refusal",
    "bearer_token",
    "is_loopback_origin",
    "token_matches",
]


class Refusal(AuthenticationError):
    """An authentication backend's refusal: the HTTP status, message and extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def token_matches(presented: str | None, token: str) -> bool:
    """Whether ``presented`` is ``token``, in time independent of where they differ."""
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode(), token.encode())


def bearer_token(conn: HTTPConnection) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme in any case), or None."""
    scheme, _, presented = conn.headers.get("authorization", "").partition(" ")
    return presented if scheme.lower() == "bearer" else None


def is_loopback_origin(origin: str) -> bool:
    """An ``Origin`` of a page served from this machine (http(s) on a loopback host)."""
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


@dataclass(eq=False)
class LoopbackOnly:
    """ASGI middleware of a loopback server: every request names a loopback ``Host``
    and, with ``check_origin``, carries no ``Origin`` but a loopback one.

    A web page whose domain re-resolves to this machine (DNS rebinding) sends its
    own name in both, so it is refused before anything else runs. ``refuse`` builds
    the answer from a status and a message (each door keeps its own body format).
    """

    app: ASGIApp
    _: KW_ONLY
    refuse: Callable[[int, str], Response]
    host_status: int = 421
    check_origin: bool = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return
        headers = HTTPConnection(scope).headers
        if not is_loopback(host_name(headers.get("host", ""))):
            refusal = self.refuse(self.host_status, "this server answers loopback Host names only")
            await refusal(scope, receive, send)
            return
        origin = headers.get("origin")
        if self.check_origin and origin is not None and not is_loopback_origin(origin):
            refusal = self.refuse(403, "requests from a non-loopback Origin are refused")
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)
