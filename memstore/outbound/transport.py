"""An httpx transport that reads at most a set number of bytes of any answer.

A provider sets the bound for the requests of one call with :func:`response_limit` (a
context variable, so concurrent calls on one client keep their own); past it the
answer is dropped and :class:`ResponseTooLarge` raised, before anything parses it.
The bound holds on the decoded body: the transport asks for gzip or deflate only and
decodes them itself, a chunk at a time, so a small compressed answer cannot expand
without bound. The answer's status line and headers reach the client (and its log
lines) with any echo of the request's credentials removed; httpcore, below, logs the
raw status line and headers at DEBUG, so its records made during a request through
this transport go through the same scrubbing (:class:`_ScrubbedRecords`).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import httpx

from memstore.outbound.secrets import Scrubber

__all__ = [
    "DEFAULT_LIMIT",
    "BadAnswer",
    "BoundedTransport",
    "ResponseTooLarge",
    "bad_answer_in",
    "response_limit",
]

DEFAULT_LIMIT = 4 * 1024 * 1024
_limit: ContextVar[int | None] = ContextVar("memstore_response_limit", default=None)
_DECODED = ("gzip", "x-gzip", "deflate")
_scrubbing: ContextVar[Scrubber | None] = ContextVar("memstore_scrubbing", default=None)
# httpcore's loggers that write what the server sent (status line, headers).
_RAW_LOGGERS = ("httpcore.http11", "httpcore.http2", "httpcore.connection", "httpcore.proxy")


class _ScrubbedRecords(logging.Filter):
    """Rewrites a record made while this transport waits for an answer, without keys."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrub = _scrubbing.get()
        if scrub is not None:
            record.msg = scrub(record.getMessage(), limit=2000)
            record.args = None
        return True


def _install_filter() -> None:
    for name in _RAW_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ScrubbedRecords) for f in logger.filters):
            logger.addFilter(_ScrubbedRecords())


_install_filter()


class BadAnswer(Exception):
    """An answer refused before it was parsed (too large, unknown content encoding)."""


class ResponseTooLarge(BadAnswer):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


def bad_answer_in(error: BaseException | None) -> BadAnswer | None:
    """The :class:`BadAnswer` that ``error`` is or was caused by (a client may wrap it)."""
    seen = 0
    while error is not None and seen < 16:
        if isinstance(error, BadAnswer):
            return error
        error = error.__cause__ or error.__context__
        seen += 1
    return None


@contextmanager
def response_limit(size: int) -> Iterator[None]:
    """Answers to requests made inside this block may have at most ``size`` bytes."""
    token = _limit.set(size)
    try:
        yield
    finally:
        _limit.reset(token)


class BoundedTransport(httpx.AsyncBaseTransport):
    """:class:`httpx.AsyncHTTPTransport` with a bounded answer size."""

    def __init__(self, default_limit: int = DEFAULT_LIMIT) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._default = default_limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        limit = _limit.get() or self._default
        request.headers["accept-encoding"] = "gzip, deflate"
        credential = request.headers.get("authorization", "").partition(" ")[2]
        scrub = Scrubber([credential])
        token = _scrubbing.set(scrub)
        try:
            response = await self._inner.handle_async_request(request)
        finally:
            _scrubbing.reset(token)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        declared = response.headers.get("content-length", "")
        if encoding not in ("identity", "", *_DECODED):
            await response.aclose()
            raise BadAnswer(
                f"the answer's content encoding {scrub(encoding, 40)!r} is not one asked for"
            )
        if encoding in ("identity", "") and declared.isdigit() and int(declared) > limit:
            await response.aclose()
            raise ResponseTooLarge(limit)
        headers = [
            (name, scrub(value, 2000))
            for name, value in response.headers.items()
            if name not in ("content-encoding", "content-length")
        ]
        extensions = dict(response.extensions)
        # The server's reason phrase goes into httpx's log line: the standard one instead.
        extensions["reason_phrase"] = httpx.codes.get_reason_phrase(response.status_code).encode()
        inner = response.stream
        assert isinstance(inner, httpx.AsyncByteStream)  # an async transport's
        stream = _Bounded(inner, limit, encoding in _DECODED)
        return httpx.Response(
            response.status_code, headers=headers, stream=stream, extensions=extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Bounded(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, compressed: bool) -> None:
        self._inner = inner
        self._limit = limit
        # 32 + 15: a gzip or zlib header, detected from the data.
        self._decoder = zlib.decompressobj(47) if compressed else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            for part in self._decoded(chunk, seen):
                seen += len(part)
                if seen > self._limit:
                    raise ResponseTooLarge(self._limit)
                yield part
        if self._decoder is not None:
            try:
                rest = self._decoder.flush()
            except zlib.error as error:
                raise BadAnswer(f"the answer's compressed body is corrupt: {error}") from error
            if seen + len(rest) > self._limit:
                raise ResponseTooLarge(self._limit)
            if rest:
                yield rest

    def _decoded(self, chunk: bytes, seen: int) -> Iterator[bytes]:
        if self._decoder is None:
            yield chunk
            return
        data = chunk
        while data:
            try:
                # At most one byte past the bound: enough to know it is exceeded.
                part = self._decoder.decompress(data, self._limit - seen + 1)
            except zlib.error as error:
                raise BadAnswer(f"the answer's compressed body is corrupt: {error}") from error
            seen += len(part)
            yield part
            data = self._decoder.unconsumed_tail

    async def aclose(self) -> None:
        await self._inner.aclose()
