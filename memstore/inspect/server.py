"""Start the inspector: the bind/token rules, opening the store, the uvicorn server."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Callable
from typing import Any

from memstore.core.validation import check_limit
from memstore.embeddings.base import Embedder
from memstore.embeddings.spec import ModelSpec
from memstore.errors import InvalidInput
from memstore.inspect.auth import is_loopback
from memstore.rerankers.base import Reranker
from memstore.schema.database import require_existing_database, resolve_url

__all__ = ["TOKEN_PATTERN", "Inspector", "check_bind"]

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


class Inspector:
    """The inspector server: opens the store, then serves until stopped.

    The store is opened before the socket is served, so a missing database, an
    out-of-date schema or the wrong embedder is a :class:`MemstoreError` raised
    by :meth:`run`, not a traceback from inside the server.
    """

    def __init__(
        self,
        url: str | None,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        embedder: Embedder | ModelSpec | None = None,
        reranker: Reranker | ModelSpec | None = None,
        max_rows: int = 2000,
    ) -> None:
        check_bind(host, token)
        self.max_rows = check_limit("max_rows", max_rows, maximum=1_000_000)
        self.url = resolve_url(url)
        self.host = host
        self.port = port
        self.token = token
        self.embedder = embedder
        self.reranker = reranker
        self._server: Any = None
        self._stop = False

    @property
    def started(self) -> bool:
        return bool(self._server is not None and self._server.started)

    def stop(self) -> None:
        """Ask a running (or starting) server to exit; safe from any thread."""
        self._stop = True
        if self._server is not None:
            self._server.should_exit = True

    async def serve(
        self,
        sockets: list[socket.socket] | None = None,
        *,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        """Open the store, call ``on_ready`` (e.g. to announce the address), then serve."""
        import uvicorn

        from memstore.inspect.app import create_app
        from memstore.store import MemoryStore

        # Opening a missing SQLite file would create it: a read-only tool must not.
        require_existing_database(self.url)
        # Never migrates (the page must not write); the embedder must be the
        # database's, since searches compare query vectors with stored ones.
        async with MemoryStore.open(
            self.url, embedder=self.embedder, reranker=self.reranker, auto_migrate=False
        ) as store:
            app = create_app(store, token=self.token, max_rows=self.max_rows)
            config = uvicorn.Config(
                app,
                host=self.host,
                port=self.port,
                log_level="warning",
                access_log=False,
                lifespan="off",
            )
            self._server = uvicorn.Server(config)
            if self._stop:
                return
            if on_ready is not None:
                on_ready()
            await self._server.serve(sockets=sockets)

    def run(
        self,
        sockets: list[socket.socket] | None = None,
        *,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        asyncio.run(self.serve(sockets, on_ready=on_ready))
