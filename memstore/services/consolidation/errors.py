"""Errors of the consolidation job. All are MemstoreError, so the CLI reports them."""

from __future__ import annotations

from memstore.errors import MemstoreError

__all__ = ["ExtractionError", "LLMEndpointError", "LLMResponseError"]


class ExtractionError(MemstoreError):
    """An extractor could not turn a batch into facts; nothing of the batch was written."""


class LLMEndpointError(ExtractionError):
    """The chat-completions endpoint failed (timeout, connection, HTTP error) after retries."""


class LLMResponseError(ExtractionError):
    """The endpoint answered, but not with the strict JSON facts it was asked for."""
