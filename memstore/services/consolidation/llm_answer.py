"""A chat-completions endpoint's answer and failures, typed and scrubbed for the LLM
extractor: the first choice's text, or a :class:`Failure` holding the
:class:`~memstore.services.consolidation.errors.ExtractionError` to raise."""

from __future__ import annotations

import json
from dataclasses import dataclass

from memstore.outbound.secrets import Scrubber
from memstore.services.consolidation.errors import LLMEndpointError, LLMResponseError

__all__ = ["Failure", "content_of", "failure_of"]


@dataclass(frozen=True)
class Failure:
    """One attempt's failure: the error to raise, whether another attempt may help,
    and the server's ``Retry-After``."""

    error: LLMEndpointError | LLMResponseError
    retry: bool = True
    retry_after: str | None = None


def failure_of(
    error: BaseException, scrub: Scrubber, timeout: float, refused: Exception | None
) -> Failure:
    """The typed failure for what the SDK (or the deadline around it) raised."""
    import httpx
    import openai

    if refused is not None:
        return Failure(LLMResponseError(f"LLM endpoint answered badly: {refused}"), retry=False)
    if isinstance(error, TimeoutError | openai.APITimeoutError):
        return Failure(LLMEndpointError(f"LLM endpoint timed out after {timeout}s"))
    if isinstance(error, openai.APIConnectionError | httpx.HTTPError):
        reason = scrub(error.__cause__ or error, limit=200)
        return Failure(LLMEndpointError(f"LLM endpoint unreachable: {reason}"))
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        try:
            body = error.response.text
        except Exception as unread:  # an undecodable body: its kind is enough
            body = type(unread).__name__
        detail = "the API key was refused" if status in (401, 403) else scrub(body, limit=300)
        failed = LLMEndpointError(f"LLM endpoint answered HTTP {status}: {detail}")
        if status == 429 or status >= 500:
            return Failure(failed, retry_after=error.response.headers.get("retry-after"))
        return Failure(failed, retry=False)
    return Failure(LLMResponseError("LLM endpoint did not answer in the chat-completions format"))


def content_of(raw: bytes) -> str | Failure:
    """The first choice's text of a chat-completions answer."""
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        document = None
    choices = document.get("choices") if isinstance(document, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        return Failure(
            LLMResponseError("LLM endpoint did not answer in the chat-completions format")
        )
    content = message.get("content")
    if not isinstance(content, str):
        return Failure(LLMResponseError("LLM answer has no text content"))
    return content
