"""A hostile model endpoint on 127.0.0.1 for the providers' tests (embeddings, rerank,
chat completions): it answers each request as ``server.mode`` says, the way a broken
server, a proxy or an attacker might.

Modes (``HOSTILE_MODES`` the ones every provider must survive):
``echo-400`` / ``echo-401`` / ``echo-503``: the request's ``Authorization`` echoed into
the body, a header and the status line; ``echo-200``: into an HTML page with status 200;
``drip``: a valid answer after ``drip_seconds`` of whitespace, 8 bytes at a time (no
single read waits long); ``huge`` / ``huge-chunked`` / ``huge-gzip``: a valid answer
padded to ``HUGE`` bytes (declared, chunked, or gzip-compressed to a few kilobytes);
``html``: an HTML page with 200; ``strings`` / ``nan`` / ``1e39`` / ``10^400``: numbers as
strings, NaN, past float32, past float64; ``empty``: no vectors or scores;
``retry-after:VALUE``: 503 with that ``Retry-After`` once, then ``good``.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["HOSTILE_MODES", "HUGE", "HostileServer", "hostile_server", "key_parts"]

HUGE = 25 * 1024 * 1024
HOSTILE_MODES = (
    "echo-400",
    "echo-401",
    "echo-503",
    "echo-200",
    "drip",
    "huge",
    "huge-chunked",
    "huge-gzip",
    "html",
    "strings",
    "nan",
    "1e39",
    "10^400",
    "empty",
)
WIDTH = 4


def key_parts(key: str, size: int = 8) -> list[str]:
    """The key and every run of ``size`` of its characters: what must appear nowhere."""
    return [key, *(key[i : i + size] for i in range(len(key) - size + 1))]


def _number(mode: str, i: int) -> Any:
    return {"strings": "0.5", "nan": "NaN", "1e39": "1e39", "10^400": "1" + "0" * 400}.get(
        mode, 0.1 * (i + 1)
    )


def _raw(value: Any) -> str:
    # NaN, 1e39 and 10**400 written as JSON number literals, not strings.
    return value if isinstance(value, str) and value != "0.5" else json.dumps(value)


def _vector(mode: str, width: int) -> str:
    return ", ".join(_raw(_number(mode, j)) for j in range(width))


def good_answer(
    path: str, request: dict[str, Any], mode: str = "good", width: int = WIDTH
) -> bytes:
    """A valid answer for ``path`` (or one with ``mode``'s bad numbers or no items)."""
    empty = mode == "empty"
    if path.endswith("/embeddings"):
        texts = request.get("input") or []
        items = [
            f'{{"object": "embedding", "index": {i}, "embedding": [{_vector(mode, width)}]}}'
            for i in range(0 if empty else len(texts))
        ]
        # As OpenAI-compatible servers do, the tokens counted (a word a token, here).
        used = sum(len(str(text).split()) for text in texts)
        usage = f'{{"prompt_tokens": {used}, "total_tokens": {used}}}'
        return (
            f'{{"object": "list", "model": "m", "data": [{", ".join(items)}], "usage": {usage}}}'
        ).encode()
    if path.endswith("/rerank"):
        texts = request.get("documents") or request.get("texts") or []
        items = [
            f'{{"index": {i}, "relevance_score": {_raw(_number(mode, i))}}}'
            for i in range(0 if empty else len(texts))
        ]
        return f'{{"results": [{", ".join(items)}]}}'.encode()
    facts: dict[str, Any] = {"facts": []}
    choices = (
        []
        if empty
        else [{"index": 0, "message": {"role": "assistant", "content": json.dumps(facts)}}]
    )
    return json.dumps({"id": "x", "object": "chat.completion", "choices": choices}).encode()


class HostileServer:
    def __init__(self) -> None:
        self.mode = "good"
        # When set, only requests to a path ending so get ``mode``; the others "good".
        self.only_path: str | None = None
        self.drip_seconds = 6.0
        self.width = WIDTH
        self.requests = 0
        self.authorizations: list[str] = []
        # Texts per rerank request.
        self.documents: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                server.requests += 1
                auth = self.headers.get("Authorization", "")
                server.authorizations.append(auth)
                server.documents.append(len(request.get("documents") or []))
                try:
                    server.answer(self, request, auth)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a deadline does

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, handler: BaseHTTPRequestHandler, request: dict[str, Any], auth: str) -> None:
        mode, path = self.mode, handler.path
        if self.only_path is not None and not path.endswith(self.only_path):
            mode = "good"
        if mode.startswith("retry-after:"):
            if self.requests == 1:
                self.send(handler, 503, b'{"error": "busy"}', {"Retry-After": mode[12:]})
                return
            mode = "good"
        echo = f"bad request; you sent {auth or 'nothing'}"
        if mode.startswith("echo-") and mode != "echo-200":
            status = int(mode[5:])
            body = json.dumps({"error": {"message": echo, "type": "invalid_request_error"}})
            self.send(handler, status, body.encode(), {"X-Echo": auth}, reason=f"Bad {auth}")
            return
        if mode in ("echo-200", "html"):
            said = echo if mode == "echo-200" else ""
            page = f"<html><body><h1>Proxy</h1><p>{said}</p></body></html>"
            self.send(handler, 200, page.encode(), {"Content-Type": "text/html"})
            return
        body = good_answer(path, request, mode, self.width)
        if mode == "drip":
            self.drip(handler, body)
        elif mode.startswith("huge"):
            padded = body[:-1] + b', "padding": "' + b"x" * HUGE + b'"}'
            if mode == "huge-gzip":
                self.send(handler, 200, gzip.compress(padded, 9), {"Content-Encoding": "gzip"})
            else:
                self.send(handler, 200, padded, chunked=mode == "huge-chunked")
        else:
            self.send(handler, 200, body)

    @staticmethod
    def send(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        *,
        reason: str | None = None,
        chunked: bool = False,
    ) -> None:
        handler.send_response(status, reason)
        handler.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not chunked:
            handler.wfile.write(body)
            return
        for start in range(0, len(body), 1 << 20):
            piece = body[start : start + (1 << 20)]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")

    def drip(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        steps = int(self.drip_seconds / 0.25)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(8 * steps + len(body)))
        handler.end_headers()
        handler.wfile.flush()
        for _ in range(steps):  # JSON may start with any amount of whitespace
            handler.wfile.write(b" " * 8)
            handler.wfile.flush()
            time.sleep(0.25)
        handler.wfile.write(body)


@contextmanager
def hostile_server() -> Iterator[HostileServer]:
    server = HostileServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join(timeout=10)
