"""HTTP gate of ``memstore mcp --transport http``: who is calling, and may they.

On a loopback bind address every request must name a loopback host (``Host``)
and, if it carries an ``Origin``, a loopback origin: a web page whose domain
re-resolves to this machine (DNS rebinding) is refused before anything else
(:class:`memstore.web.gate.LoopbackOnly`). A non-loopback bind needs a bearer
token, which such a page cannot know. Every request must name its tenant in
``X-Memstore-User`` (UTF-8) and that name must be on the allow-list given at
start-up; with a token configured it must also carry ``Authorization: Bearer
<token>``. Both are checked by Starlette's ``AuthenticationMiddleware`` with
:class:`TenantBackend`. Refused requests never reach the MCP app, so a tool
call can only ever run as an allow-listed tenant. The gate decodes the tenant
once and hands it to the handlers in the ASGI scope (:func:`tenant_from_scope`),
so both always agree on who is calling.

:class:`PostOnly` answers what the streamable-HTTP transport says a server
without a server-to-client stream answers: ``405 Method Not Allowed`` to
anything but ``POST``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response

from memstore.core.tenancy import storage_user_id
from memstore.errors import InvalidInput
from memstore.web.asgi import ASGIApp, Receive, Scope, Send, is_loopback
from memstore.web.gate import LoopbackOnly, Refusal, bearer_token, token_matches

__all__ = [
    "TENANT_SCOPE_KEY",
    "USER_HEADER",
    "PostOnly",
    "TenantBackend",
    "TenantGate",
    "is_loopback",
    "tenant_from_scope",
]

USER_HEADER = "x-memstore-user"
# Where the gate leaves the tenant it decoded and checked, for the handlers.
TENANT_SCOPE_KEY = "memstore.tenant"
_USER_KEY = USER_HEADER.encode()


def tenant_from_scope(scope: Mapping[str, Any] | None, allowed: frozenset[str]) -> str:
    """The allow-listed tenant :class:`TenantGate` put into a request's ASGI scope.

    Raises :class:`InvalidInput` otherwise; the gate has refused such requests
    already, this is the handlers' second check.
    """
    user = scope.get(TENANT_SCOPE_KEY) if scope is not None else None
    if not isinstance(user, str) or user not in allowed:
        raise InvalidInput("this request names no allow-listed tenant in X-Memstore-User")
    return user


def _refuse(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class TenantBackend(AuthenticationBackend):
    """The bearer token (when one is configured), then the allow-listed tenant header."""

    def __init__(self, *, allowed: frozenset[str], token: str | None) -> None:
        self.allowed = allowed
        self.token = token

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser]:
        if self.token is not None and not token_matches(bearer_token(conn), self.token):
            raise Refusal(
                401,
                "missing or wrong bearer token",
                {"www-authenticate": 'Bearer realm="memstore"'},
            )
        # Raw bytes: Starlette decodes headers as latin-1, the tenant is UTF-8.
        raw = next((v for k, v in conn.scope.get("headers", []) if k.lower() == _USER_KEY), None)
        if raw is None:
            raise Refusal(401, "missing X-Memstore-User header (the tenant to act as)")
        try:
            user: str | None = raw.decode("utf-8")
        except UnicodeDecodeError:
            user = None
        if user is None or user not in self.allowed:
            raise Refusal(
                403,
                "X-Memstore-User names a tenant not on this server's allow-list (--allow-user)",
            )
        conn.scope[TENANT_SCOPE_KEY] = user
        return AuthCredentials(["tenant"]), SimpleUser(user)


def _on_error(conn: HTTPConnection, error: Exception) -> Response:
    if isinstance(error, Refusal):
        return _refuse(error.status, error.message, error.headers)
    return _refuse(401, str(error))  # pragma: no cover - the backend raises Refusal only


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
        gated: ASGIApp = AuthenticationMiddleware(
            app, backend=TenantBackend(allowed=allowed, token=token), on_error=_on_error
        )
        if self.loopback:
            # Checked on every loopback address, not only the ones the SDK knows.
            gated = LoopbackOnly(gated, refuse=_refuse, host_status=421)
        self._gated = gated

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._gated(scope, receive, send)


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
            refusal = _refuse(
                405,
                "this stateless MCP server takes POST only (no server-to-client stream)",
                {"allow": "POST"},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)
