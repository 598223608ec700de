"""HTTP gate of ``memstore mcp --transport http``: who is calling, and may they.

On a loopback bind address every request must name a loopback host (``Host``)
and, if it carries an ``Origin``, a loopback origin: a web page whose domain
re-resolves to this machine (DNS rebinding) is refused before anything else.
A non-loopback bind needs a bearer token, which such a page cannot know. Every
request must name its tenant in ``X-Memstore-User`` (UTF-8) and that name must
be on the allow-list given at start-up; with a token configured it must also
carry ``Authorization: Bearer <token>``. Refused requests never reach the MCP
app, so a tool call can only ever run as an allow-listed tenant. The gate
decodes the tenant once and hands it to the handlers in the ASGI scope
(:func:`tenant_from_scope`), so both always agree on who is calling.

:class:`PostOnly` answers what the streamable-HTTP transport says a server
without a server-to-client stream answers: ``405 Method Not Allowed`` to
anything but ``POST``. Plain ASGI: no dependency beyond the standard library.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from memstore.core.tenancy import storage_user_id
from memstore.errors import InvalidInput
from memstore.web.asgi import ASGIApp, Receive, Scope, Send, host_name, is_loopback

__all__ = [
    "TENANT_SCOPE_KEY",
    "USER_HEADER",
    "PostOnly",
    "TenantGate",
    "is_loopback",
    "tenant_from_scope",
]

USER_HEADER = "x-memstore-user"
# Where the gate leaves the tenant it decoded and checked, for the handlers.
TENANT_SCOPE_KEY = "memstore.tenant"


def tenant_from_scope(scope: Mapping[str, Any] | None, allowed: frozenset[str]) -> str:
    """The allow-listed tenant :class:`TenantGate` put into a request's ASGI scope.

    Raises :class:`InvalidInput` otherwise; the gate has refused such requests
    already, this is the handlers' second check.
    """
    user = scope.get(TENANT_SCOPE_KEY) if scope is not None else None
    if not isinstance(user, str) or user not in allowed:
        raise InvalidInput("this request names no allow-listed tenant in X-Memstore-User")
    return user


def _loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


class TenantGate:
    """ASGI middleware in front of the MCP app: Host/Origin, bearer token, tenant allow-list."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_users: Iterable[str],
        token: str | None,
        host: str,
    ) -> None:
        allowed = frozenset(allowed_users)
        if not allowed:
            raise InvalidInput("give at least one --allow-user for the HTTP transport")
        for user in allowed:
            storage_user_id(user)  # a tenant id memstore accepts, or InvalidInput now
        if token is not None and not token.strip():
            raise InvalidInput("the bearer token must not be empty")
        self.loopback = is_loopback(host)
        if token is None and not self.loopback:
            raise InvalidInput(
                f"refusing to serve on non-loopback host {host!r} without a bearer "
                "token: pass --token or set $MEMSTORE_MCP_TOKEN"
            )
        self.app = app
        self.allowed = allowed
        self._token = token.encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return
        headers: dict[str, bytes] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.decode("latin-1").lower(), value)
        if self.loopback:
            # Checked on every loopback address, not only the ones the SDK knows.
            host = headers.get("host", b"").decode("latin-1")
            if not is_loopback(host_name(host)):
                await _refuse(send, 421, "this server answers loopback Host names only")
                return
            origin = headers.get("origin")
            if origin is not None and not _loopback_origin(origin.decode("latin-1")):
                await _refuse(send, 403, "requests from a non-loopback Origin are refused")
                return
        if self._token is not None:
            auth = headers.get("authorization", b"")
            scheme, _, presented = auth.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(presented, self._token):
                await _refuse(
                    send,
                    401,
                    "missing or wrong bearer token",
                    [(b"www-authenticate", b'Bearer realm="memstore"')],
                )
                return
        raw_user = headers.get(USER_HEADER)
        if raw_user is None:
            await _refuse(send, 401, "missing X-Memstore-User header (the tenant to act as)")
            return
        try:
            user = raw_user.decode("utf-8")
        except UnicodeDecodeError:
            user = None
        if user not in self.allowed:
            await _refuse(
                send,
                403,
                "X-Memstore-User names a tenant not on this server's allow-list (--allow-user)",
            )
            return
        scope[TENANT_SCOPE_KEY] = user
        await self.app(scope, receive, send)


class PostOnly:
    """``405 Method Not Allowed`` (``Allow: POST``) to every method but ``POST``.

    A stateless server has no session to resume or end and offers no
    server-to-client stream, so a ``GET`` must not open one that never ends.
    """

    def __init__(self, app: ASGIApp, *, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] != "POST":
            await _refuse(
                send,
                405,
                "this stateless MCP server takes POST only (no server-to-client stream)",
                [(b"allow", b"POST")],
            )
            return
        await self.app(scope, receive, send)


async def _refuse(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
