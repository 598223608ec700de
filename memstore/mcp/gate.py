"""HTTP gate of ``memstore mcp --transport http``: who is calling, and may they.

Every request must name its tenant in ``X-Memstore-User`` and that name must be
on the allow-list given at start-up; with a token configured it must also carry
``Authorization: Bearer <token>``. Refused requests never reach the MCP app,
so a tool call can only ever run as an allow-listed tenant. Plain ASGI: no
dependency beyond the standard library.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from typing import Any

from memstore.asgi import ASGIApp, Receive, Scope, Send, is_loopback
from memstore.errors import InvalidInput
from memstore.tenancy import storage_user_id

__all__ = ["USER_HEADER", "TenantGate", "is_loopback", "tenant_from_headers"]

USER_HEADER = "x-memstore-user"


def tenant_from_headers(headers: Any, allowed: frozenset[str]) -> str:
    """The allow-listed tenant named by a request's headers (a case-insensitive mapping).

    Raises :class:`InvalidInput` otherwise; the gate has refused such requests
    already, this is the handlers' second check.
    """
    user = headers.get(USER_HEADER) if headers is not None else None
    if not user or user not in allowed:
        raise InvalidInput("this request names no allow-listed tenant in X-Memstore-User")
    return str(user)


class TenantGate:
    """ASGI middleware in front of the MCP app: tenant allow-list and bearer token."""

    def __init__(self, app: ASGIApp, *, allowed_users: Iterable[str], token: str | None) -> None:
        allowed = frozenset(allowed_users)
        if not allowed:
            raise InvalidInput("give at least one --allow-user for the HTTP transport")
        for user in allowed:
            storage_user_id(user)  # a tenant id memstore accepts, or InvalidInput now
        if token is not None and not token.strip():
            raise InvalidInput("the bearer token must not be empty")
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
