"""A rerank endpoint over HTTP: the shape Cohere, Jina, vLLM and Infinity share, and TEI's.

``POST {base_url}/rerank`` with ``{model, query, documents, top_n}`` answers
``{results: [{index, relevance_score}]}`` on Cohere (``base_url`` ending in
``/v2``), Jina (``/v1``), vLLM and Infinity; Hugging Face's text-embeddings-
inference takes ``{query, texts}`` and answers a bare list of ``{index, score}``
(``flavor="tei"``). The client follows the SDKs' conventions: the API key is read
from an environment variable at each request (never stored, logged or shown, nor
any echo of it in an answer), a deadline on each whole request, retries with
exponential backoff on 408/409/429/5xx and transport failures, honouring a usable
``Retry-After``. An answer is read up to a size bound and checked: anything but one
finite score per text is :class:`RerankerEndpointError`. httpx is imported when a
reranker is constructed (extra ``rerank``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from memstore.errors import InvalidInput
from memstore.outbound.retry import next_delay
from memstore.outbound.secrets import ProviderFault, Scrubber
from memstore.rerankers.base import MAX_RERANK_CANDIDATES, RerankerEndpointError
from memstore.telemetry import retried

__all__ = ["HTTPReranker"]

log = logging.getLogger(__name__)

_MISSING = "HTTPReranker needs the optional extra: pip install 'memstore[rerank]' (httpx)"
_RETRIED = frozenset({408, 409, 429})
# An answer's bytes: an item ({"index": 999, "relevance_score": -1.2345e-05}) takes
# under 100; some endpoints (Jina) echo each document back, hence the request's size.
_ITEM_BYTES = 256
_ENVELOPE_BYTES = 64 * 1024


def _public_url(url: str) -> str:
    """``url`` without user information (a password in a URL is a secret too)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


class HTTPReranker:
    """A rerank endpoint: ``HTTPReranker("rerank-v3.5", base_url="https://api.cohere.com/v2",
    api_key_env="COHERE_API_KEY")``.

    ``api_key_env`` names the environment variable holding the key, sent as
    ``Authorization: Bearer``; when it is unset no key is sent (local servers).
    ``timeout`` bounds each attempt whole (connect, send, every read, parsing), in
    seconds; ``max_retries`` further attempts follow a retryable failure after
    ``backoff * 2**attempt`` seconds (or the server's ``Retry-After`` in seconds or as
    a date; either at most 30). Then :class:`RerankerEndpointError`. A request holds
    at most ``max_texts`` texts (Cohere's limit is 1,000): more are sent in several.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key_env: str | None = "MEMSTORE_RERANK_API_KEY",
        flavor: Literal["cohere", "tei"] = "cohere",
        timeout: float = 30.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_texts: int = MAX_RERANK_CANDIDATES,
        identity: str | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ImportError(_MISSING) from exc
        self._httpx: Any = httpx
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("HTTPReranker needs the endpoint's model name")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidInput("HTTPReranker base_url must start with http:// or https://")
        if flavor not in ("cohere", "tei"):
            raise InvalidInput(f"HTTPReranker flavor must be 'cohere' or 'tei', got {flavor!r}")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < math.inf
        ):
            raise InvalidInput("HTTPReranker timeout must be a positive number of seconds")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidInput("HTTPReranker max_retries must be a non-negative integer")
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or not 0 <= backoff:
            raise InvalidInput("HTTPReranker backoff must be a non-negative number of seconds")
        if isinstance(max_texts, bool) or not isinstance(max_texts, int) or max_texts < 1:
            raise InvalidInput("HTTPReranker max_texts must be a positive integer")
        self.model = model
        self.flavor = flavor
        self.url = base_url.rstrip("/") + "/rerank"
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_texts = max_texts
        self._identity = identity or f"http-rerank:{_public_url(self.url)}#{model}"
        # One client (and its connection pool) per event loop: a pool's connections
        # belong to the loop that opened them.
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def _body(self, query: str, texts: Sequence[str]) -> dict[str, Any]:
        if self.flavor == "tei":
            return {"query": query, "texts": list(texts), "truncate": True}
        return {"model": self.model, "query": query, "documents": list(texts), "top_n": len(texts)}

    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _scrubber(self, key: str | None) -> Scrubber:
        return Scrubber([key, self._key(), urlsplit(self.url).password])

    def scores_from(self, answer: Any, count: int) -> list[float]:
        """One finite score per text from the answer's ``(index, score)`` items."""
        field = "score" if self.flavor == "tei" else "relevance_score"
        scores: list[float | None] = [None] * count
        try:
            items: Any = answer if self.flavor == "tei" else answer["results"]
            for item in items:
                index = item["index"]
                if isinstance(index, bool) or not isinstance(index, int):
                    raise TypeError(f"index {index!r}")
                if not 0 <= index < count or scores[index] is not None:
                    raise ValueError(f"index {index} out of range or repeated")
                score = item[field]
                if isinstance(score, bool) or not isinstance(score, int | float):
                    raise TypeError(f"score {score!r}")
                try:
                    value = float(score)
                except OverflowError:  # an integer past float's range: 10**400
                    value = math.inf
                if not math.isfinite(value):
                    raise ValueError("a score that is not a finite number")
                scores[index] = value
        except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
            why = self._scrubber(None)(f"{type(exc).__name__}: {exc}", limit=200)
            failed = RerankerEndpointError(
                f"rerank endpoint {_public_url(self.url)} answered in another shape than "
                f"flavor {self.flavor!r} ({why})"
            )
        else:
            missing = [i for i, s in enumerate(scores) if s is None]
            if not missing:
                return [s for s in scores if s is not None]
            failed = RerankerEndpointError(
                f"rerank endpoint {_public_url(self.url)} scored {count - len(missing)} of "
                f"{count} texts"
            )
        # Raised outside the handler: the answer's text is in no exception's context.
        raise failed from None

    def _client_here(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            from memstore.outbound.transport import BoundedTransport

            transport = BoundedTransport()
            self._client = self._httpx.AsyncClient(timeout=self.timeout, transport=transport)
            self._loop = loop
        return self._client

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        scores: list[float] = []
        for start in range(0, len(texts), self.max_texts):
            scores += await self._request(query, texts[start : start + self.max_texts])
        return scores

    async def _request(self, query: str, texts: Sequence[str]) -> list[float]:
        """One request's scores, with this reranker's attempts; every failure typed."""
        client = self._client_here()
        body = json.dumps(self._body(query, texts), ensure_ascii=False).encode()
        limit = _ENVELOPE_BYTES + 2 * len(body) + _ITEM_BYTES * len(texts)
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            outcome = await self._attempt(client, body, limit, len(texts))
            if isinstance(outcome, list):
                return outcome
            failed, retryable, retry_after = outcome
            if not retryable or attempt + 1 == attempts:
                break
            wait = next_delay(self.backoff, attempt, retry_after)
            retried("rerank", self, attempt + 1, failed)
            log.warning(
                "rerank attempt %d of %d failed (%s); retrying in %.2f s",
                attempt + 1,
                attempts,
                failed,
                wait,
            )
            await asyncio.sleep(wait)
        if not retryable:
            raise failed from failed.__cause__
        raise RerankerEndpointError(
            f"rerank endpoint {_public_url(self.url)} failed after {attempts} attempts ({failed})"
        ) from failed.__cause__

    async def _attempt(
        self, client: Any, body: bytes, limit: int, count: int
    ) -> list[float] | tuple[RerankerEndpointError, bool, str | None]:
        """Scores, or the failure, whether another attempt may help, and the server's
        ``Retry-After``."""
        from memstore.outbound.transport import BadAnswer, response_limit

        httpx = self._httpx
        key = self._key()
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        where = _public_url(self.url)
        scrub = self._scrubber(key)
        fault: ProviderFault | None = None
        retry_after: str | None = None
        try:
            with response_limit(limit):
                async with asyncio.timeout(self.timeout):
                    response = await client.post(self.url, content=body, headers=headers)
        except (TimeoutError, httpx.HTTPError, BadAnswer) as exc:
            fault = ProviderFault.of(exc, scrub)
            if isinstance(exc, BadAnswer) or isinstance(exc.__cause__, BadAnswer):
                failed = RerankerEndpointError(f"rerank endpoint {where} answered badly: {fault}")
                retryable = False
            else:
                late = isinstance(exc, TimeoutError | httpx.TimeoutException)
                kind = f"timed out after {self.timeout} s" if late else type(exc).__name__
                failed, retryable = RerankerEndpointError(kind), True
        else:
            status = response.status_code
            if status < 300:
                return self._scores(response.content, count)
            retryable = status in _RETRIED or status >= 500
            if retryable:
                failed = RerankerEndpointError(f"HTTP {status}")
                retry_after = response.headers.get("retry-after")
            else:
                detail = "the API key was refused" if status in (401, 403) else response.text
                failed = RerankerEndpointError(
                    f"rerank endpoint {where} refused the request: HTTP {status} "
                    f"{scrub(detail, limit=200)!r}"
                )
        failed.__cause__ = fault
        return failed, retryable, retry_after

    def _scores(
        self, content: bytes, count: int
    ) -> list[float] | tuple[RerankerEndpointError, bool, None]:
        try:
            answer = json.loads(content)
        except (ValueError, RecursionError):
            failed = RerankerEndpointError(
                f"rerank endpoint {_public_url(self.url)} answered no JSON"
            )
            return failed, False, None
        try:
            return self.scores_from(answer, count)
        except RerankerEndpointError as exc:
            return exc, False, None

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def __repr__(self) -> str:
        url = _public_url(self.url)
        return f"HTTPReranker({self.model!r}, url={url!r}, flavor={self.flavor!r})"
