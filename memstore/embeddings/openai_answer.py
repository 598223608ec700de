"""An embeddings endpoint's answer, checked, and its failures, typed and scrubbed.

Everything here reads what came from outside: the body of ``POST /embeddings``
(parsed here, not by the SDK, so any shape is an :class:`EmbedderError`) and the
SDK's exceptions (turned into :class:`EmbedderError` / :class:`EmbedderUnavailable`
whose text and cause hold no key, see :mod:`memstore.outbound.secrets`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from memstore.errors import EmbedderError, EmbedderUnavailable
from memstore.outbound.secrets import ProviderFault, Scrubber
from memstore.telemetry import input_tokens

__all__ = ["Failure", "answer_bytes", "failure_of", "shown", "vectors_of"]

# Bytes an answer may take: a number written out in JSON takes at most about 25
# characters ("-0.012345678901234567e-05,"), base64 under 6; an item's own fields and
# the envelope (model, usage) take little. A width not yet known is taken as this.
_NUMBER_BYTES = 32
_ITEM_BYTES = 512
_ENVELOPE_BYTES = 64 * 1024
_WIDEST = 65_536
# More input tokens than any one request can carry: a usage figure past it is not believed.
_MOST_TOKENS = 1_000_000_000


def answer_bytes(texts: int, width: int | None) -> int:
    """The most bytes an honest answer for ``texts`` vectors of ``width`` takes."""
    return _ENVELOPE_BYTES + texts * (_ITEM_BYTES + _NUMBER_BYTES * (width or _WIDEST))


@dataclass(frozen=True)
class Failure:
    """One attempt's failure: the error to raise, whether another attempt may help,
    and the server's ``Retry-After``."""

    error: EmbedderError
    retry: bool = False
    retry_after: str | None = None


def shown(url: str) -> str:
    """The URL without any user:password part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl()


def _caused(error: EmbedderError, cause: BaseException, scrub: Scrubber) -> EmbedderError:
    error.__cause__ = ProviderFault.of(cause, scrub)
    error.__suppress_context__ = True
    return error


def failure_of(error: BaseException, where: str, scrub: Scrubber, timeout: float) -> Failure:
    """The typed failure for what the SDK (or the deadline around it) raised."""
    import httpx
    import openai

    from memstore.outbound.transport import bad_answer_in

    said = f"the embeddings endpoint {where}"
    refused = bad_answer_in(error)
    if refused is not None:
        return Failure(_caused(EmbedderError(f"{said} answered badly: {refused}"), error, scrub))
    if isinstance(error, TimeoutError | openai.APITimeoutError):
        late = EmbedderUnavailable(f"{said} timed out (the whole request took over {timeout} s)")
        return Failure(_caused(late, error, scrub), retry=True)
    if isinstance(error, openai.APIConnectionError | httpx.HTTPError):
        reason = scrub(error.__cause__ or error, limit=200)
        away = EmbedderUnavailable(f"{said} is unreachable: {reason}")
        return Failure(_caused(away, error, scrub), retry=True)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        # The body says why (unknown model, input too long); a refused key's may quote it.
        if status in (401, 403):
            detail = "the API key was refused"
        else:
            detail = scrub(_text(error.response), limit=300)
        message = f"{said} answered HTTP {status}: {detail}"
        if status in (408, 409, 429) or status >= 500:
            header = error.response.headers.get("retry-after")
            return Failure(_caused(EmbedderUnavailable(message), error, scrub), True, header)
        return Failure(_caused(EmbedderError(message), error, scrub))
    failed = EmbedderError(f"{said} failed: {scrub(error, limit=200)}")
    return Failure(_caused(failed, error, scrub))


def _text(response: Any) -> str:
    try:
        return str(response.text)
    except Exception as error:  # an unread or undecodable body: its kind is enough
        return type(error).__name__


def vectors_of(content: bytes, count: int, where: str) -> npt.NDArray[np.float32] | Failure:
    """The answer's vectors in input order, finite float32, one width; else a Failure."""
    said = f"the embeddings endpoint {where}"
    try:
        document = json.loads(content, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return Failure(EmbedderError(f"{said} answered something that is not JSON"))
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or len(data) != count:
        got = len(data) if isinstance(data, list) else "no"
        return Failure(EmbedderError(f"{said} answered {got} vectors for {count} texts"))
    rows: list[npt.NDArray[np.float32] | None] = [None] * count
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            return Failure(EmbedderError(f"{said} answered an item without a usable index"))
        if rows[index] is not None:
            return Failure(EmbedderError(f"{said} answered index {index} twice"))
        row = _row(item.get("embedding"))
        if row is None:
            return Failure(EmbedderError(f"{said} answered a vector that is not numbers"))
        rows[index] = row
    found = [row for row in rows if row is not None]
    widths = {len(row) for row in found}
    if len(widths) != 1 or 0 in widths:
        return Failure(EmbedderError(f"{said} answered vectors of widths {sorted(widths)}"))
    matrix = np.stack(found)
    if not np.isfinite(matrix).all():
        return Failure(EmbedderError(f"{said} answered NaN or infinite (or past float32) values"))
    used = document.get("usage")
    tokens = used.get("prompt_tokens") if isinstance(used, dict) else None
    # What the endpoint says it counted goes to telemetry only, and only if plausible.
    if isinstance(tokens, int) and not isinstance(tokens, bool) and 0 <= tokens <= _MOST_TOKENS:
        input_tokens(tokens)
    return matrix


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _row(value: object) -> npt.NDArray[np.float32] | None:
    if isinstance(value, str):  # encoding_format="base64": little-endian float32
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) % 4:
            return None
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not isinstance(value, list):
        return None
    numbers: list[float] = []
    for number in value:
        if isinstance(number, bool) or not isinstance(number, int | float):
            return None
        try:
            numbers.append(float(number))
        except OverflowError:
            numbers.append(math.inf)
    with np.errstate(over="ignore"):
        return np.asarray(numbers, dtype=np.float64).astype(np.float32)
