"""Start the inspector: the bind/token rules and the uvicorn server."""

from __future__ import annotations

import re
from typing import Any

from memstore.embeddings.base import Embedder
from memstore.errors import InvalidInput
from memstore.inspect.auth import is_loopback

__all__ = ["TOKEN_PATTERN", "build_server", "check_bind"]

# Tokens travel in a header, a query string and a cookie: URL- and cookie-safe only.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,256}")


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token, and a malformed token."""
    if token is not None and not TOKEN_PATTERN.fullmatch(token):
        raise InvalidInput(
            "the inspector token must be 16-256 characters of A-Z a-z 0-9 . _ ~ - "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if token is None and not is_loopback(host):
        raise InvalidInput(
            f"refusing to serve memory on {host!r} without a token: pass --token or set "
            "MEMSTORE_INSPECT_TOKEN (or bind 127.0.0.1)"
        )


def build_server(
    url: str | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    embedder: Embedder | None = None,
) -> Any:
    """A ``uvicorn.Server`` for the inspector (not started); checks the bind first."""
    check_bind(host, token)
    import uvicorn

    from memstore.inspect.app import create_app
    from memstore.store import MemoryStore

    def open_store() -> Any:
        # Never migrates (the page must not write); the embedder must be the
        # database's, since searches compare query vectors with stored ones.
        return MemoryStore.open(url, embedder=embedder, auto_migrate=False)

    app = create_app(open_store, token=token)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="on"
    )
    return uvicorn.Server(config)
