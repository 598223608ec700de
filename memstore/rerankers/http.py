"""A rerank endpoint over HTTP: the shape Cohere, Jina, vLLM and Infinity share, and TEI's.

``POST {base_url}/rerank`` with ``{model, query, documents, top_n}`` answers
``{results: [{index, relevance_score}]}`` on Cohere (``base_url`` ending in
``/v2``), Jina (``/v1``), vLLM and Infinity; Hugging Face's text-embeddings-
inference takes ``{query, texts}`` and answers a bare list of ``{index, score}``
(``flavor="tei"``). The client follows the SDKs' conventions: the API key is read
from an environment variable at each request (never stored, logged or shown),
a timeout per request, and retries with exponential backoff on 408/429/5xx and
transport failures, honouring ``Retry-After``. httpx is imported when a reranker
is constructed (extra ``rerank``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from memstore.errors import InvalidInput
from memstore.rerankers.base import RerankerEndpointError

__all__ = ["HTTPReranker"]

log = logging.getLogger(__name__)

_MISSING = "HTTPReranker needs the optional extra: pip install 'memstore[rerank]' (httpx)"
_RETRIED = frozenset({408, 409, 429})
_MAX_RETRY_AFTER = 30.0


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
    ``timeout`` is per attempt, in seconds; ``max_retries`` further attempts
    follow a retryable failure after ``backoff * 2**attempt`` seconds (or the
    server's ``Retry-After``, at most 30). Then :class:`RerankerEndpointError`.
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
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidInput("HTTPReranker timeout must be a positive number of seconds")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidInput("HTTPReranker max_retries must be a non-negative integer")
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or backoff < 0:
            raise InvalidInput("HTTPReranker backoff must be a non-negative number of seconds")
        self.model = model
        self.flavor = flavor
        self.url = base_url.rstrip("/") + "/rerank"
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
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

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return {"Authorization": f"Bearer {key}"} if key else {}

    def scores_from(self, answer: Any, count: int) -> list[float]:
        """One score per text from the answer's ``(index, score)`` items."""
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
                scores[index] = float(item[field])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise RerankerEndpointError(
                f"rerank endpoint {_public_url(self.url)} answered in another shape than "
                f"flavor {self.flavor!r} ({type(exc).__name__}: {exc})"
            ) from exc
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise RerankerEndpointError(
                f"rerank endpoint {_public_url(self.url)} scored {count - len(missing)} of "
                f"{count} texts"
            )
        return [s for s in scores if s is not None]

    def _client_here(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = self._httpx.AsyncClient(timeout=self.timeout)
            self._loop = loop
        return self._client

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        client = self._client_here()
        body = self._body(query, texts)
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            wait = self.backoff * 2**attempt
            try:
                response = await client.post(self.url, json=body, headers=self._headers())
            except self._httpx.TransportError as exc:
                failure = f"{type(exc).__name__}"
            else:
                if response.status_code < 300:
                    try:
                        answer = response.json()
                    except ValueError as exc:
                        raise RerankerEndpointError(
                            f"rerank endpoint {_public_url(self.url)} answered no JSON"
                        ) from exc
                    return self.scores_from(answer, len(texts))
                failure = f"HTTP {response.status_code}"
                retryable = response.status_code in _RETRIED or response.status_code >= 500
                if not retryable:
                    raise RerankerEndpointError(
                        f"rerank endpoint {_public_url(self.url)} refused the request: "
                        f"{failure} {response.text[:200]!r}"
                    )
                wait = _retry_after(response.headers.get("retry-after"), wait)
            if attempt + 1 < attempts:
                log.warning(
                    "rerank attempt %d of %d failed (%s); retrying in %.2f s",
                    attempt + 1,
                    attempts,
                    failure,
                    wait,
                )
                await asyncio.sleep(wait)
        raise RerankerEndpointError(
            f"rerank endpoint {_public_url(self.url)} failed after {attempts} attempts ({failure})"
        )

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def __repr__(self) -> str:
        url = _public_url(self.url)
        return f"HTTPReranker({self.model!r}, url={url!r}, flavor={self.flavor!r})"


def _retry_after(header: str | None, default: float) -> float:
    """The server's ``Retry-After`` in seconds (capped), else ``default``."""
    try:
        return min(max(float(header), 0.0), _MAX_RETRY_AFTER) if header else default
    except ValueError:
        return default
