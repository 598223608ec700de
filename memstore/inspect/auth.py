"""Who may read the inspector: a bearer token, and loopback-only without one.

With a token, Starlette's ``AuthenticationMiddleware`` asks :class:`TokenBackend`
for it, as ``Authorization: Bearer <token>`` or as the cookie set after a
``?token=<token>`` visit; :class:`TokenLink` turns that visit into a redirect to
the same URL without the token (so it does not linger in history or logs).
Without a token (loopback only) a request must name a loopback host, so a web
page on another origin cannot reach the inspector by DNS rebinding
(:class:`memstore.web.gate.LoopbackOnly`).
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, Response

from memstore.web.asgi import ASGIApp, Receive, Scope, Send, is_loopback
from memstore.web.gate import LoopbackOnly, Refusal, bearer_token, token_matches

__all__ = ["COOKIE", "TokenBackend", "TokenLink", "inspector_gate", "is_loopback"]

COOKIE = "memstore_inspect"


def _plain(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return PlainTextResponse(f"memstore inspect: {text}", status_code=status, headers=headers)


class TokenBackend(AuthenticationBackend):
    """The token as ``Authorization: Bearer`` or as the inspector's cookie, else 401."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser]:
        if token_matches(bearer_token(conn), self.token) or token_matches(
            conn.cookies.get(COOKIE), self.token
        ):
            return AuthCredentials(["inspect"]), SimpleUser("inspector")
        raise Refusal(
            401,
            "a token is required (Authorization: Bearer <token>, or ?token=<token> once)",
            {"www-authenticate": "Bearer"},
        )


def _on_error(conn: HTTPConnection, error: Exception) -> Response:
    if isinstance(error, Refusal):
        return _plain(error.status, error.message, error.headers)
    return _plain(401, str(error))  # pragma: no cover - the backend raises Refusal only


class TokenLink:
    """A ``?token=<token>`` visit: 303 to the same URL without it, setting the cookie.

    A wrong token in the query is left alone, so the backend refuses the request.
    """

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            conn = HTTPConnection(scope)
            query = conn.query_params.multi_items()
            given = [v for k, v in query if k == "token"]
            if given and token_matches(given[-1], self.token):
                rest = urlencode([(k, v) for k, v in query if k != "token"])
                location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
                response = Response(
                    status_code=303,
                    headers={
                        "location": location,
                        "cache-control": "no-store",
                        "referrer-policy": "no-referrer",
                    },
                )
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def inspector_gate(app: ASGIApp, *, token: str | None) -> ASGIApp:
    """The inspector's gate: with a token, every request carries it, else 401; without
    one, loopback ``Host`` names only (403)."""
    if token is None:
        return LoopbackOnly(app, refuse=_plain, host_status=403, check_origin=False)
    gated = AuthenticationMiddleware(app, backend=TokenBackend(token), on_error=_on_error)
    return TokenLink(gated, token=token)
