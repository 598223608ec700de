"""Who may read the inspector: a bearer token, and loopback-only without one."""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from memstore.web.asgi import ASGIApp, Receive, Scope, Send, host_name, is_loopback

__all__ = ["COOKIE", "TokenGate", "is_loopback"]

COOKIE = "memstore_inspect"


class TokenGate:
    """ASGI middleware: with a token, every request must carry it, else 401.

    Accepted as ``Authorization: Bearer <token>``, as the cookie set after a
    ``?token=<token>`` visit (which redirects to the same URL without the token,
    so it does not linger in history or logs), or that query parameter itself.
    Without a token (loopback only) a request must name a loopback host, so a
    web page on another origin cannot reach the inspector by DNS rebinding.
    """

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token

    def _matches(self, candidate: str | None) -> bool:
        if self.token is None or candidate is None:
            return False
        return hmac.compare_digest(candidate.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        if self.token is None:
            if is_loopback(host_name(headers.get("host", ""))):
                await self.app(scope, receive, send)
            else:
                await _plain(send, 403, "memstore inspect: loopback host names only")
            return
        auth = headers.get("authorization", "")
        if auth.startswith("Bearer ") and self._matches(auth[len("Bearer ") :]):
            await self.app(scope, receive, send)
            return
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is just no cookie
            cookie = SimpleCookie()
        morsel = cookie.get(COOKIE)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = [v for k, v in query if k == "token"]
        if given and self._matches(given[-1]):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", location.encode("utf-8")),
                        (
                            b"set-cookie",
                            f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode(),
                        ),
                        (b"cache-control", b"no-store"),
                        (b"referrer-policy", b"no-referrer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if morsel is not None and self._matches(morsel.value):
            await self.app(scope, receive, send)
            return
        await _plain(
            send,
            401,
            "memstore inspect: a token is required "
            "(Authorization: Bearer <token>, or ?token=<token> once)",
            extra=[(b"www-authenticate", b"Bearer")],
        )


async def _plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *(extra or [])],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})
