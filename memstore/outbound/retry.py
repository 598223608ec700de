"""How long to wait before the next attempt: the server's ``Retry-After``, if it is a
usable one, else exponential backoff; always a finite number of seconds within a cap."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["MAX_WAIT", "backoff_delay", "next_delay", "retry_after"]

# The longest wait between two attempts, whatever the server asks for.
MAX_WAIT = 30.0
_SECONDS = re.compile(r"\d{1,12}(?:\.\d{1,6})?")


def retry_after(header: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds within ``[0, MAX_WAIT]``: delta-seconds (a fraction
    allowed) or an HTTP date; None for anything else (``nan``, ``inf``, ``-5``, ``1e9``,
    text), which leaves the caller's backoff in force."""
    if header is None:
        return None
    text = header.strip()
    if _SECONDS.fullmatch(text):
        seconds = float(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT; "-0000" parses naive
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_WAIT)


def backoff_delay(backoff: float, attempt: int) -> float:
    """``backoff * 2**attempt`` seconds (attempt 0 first), at most ``MAX_WAIT``."""
    return min(backoff * 2.0 ** min(attempt, 32), MAX_WAIT)


def next_delay(backoff: float, attempt: int, header: str | None) -> float:
    """The wait after failed ``attempt``: the server's usable ``Retry-After``, else backoff."""
    asked = retry_after(header)
    return backoff_delay(backoff, attempt) if asked is None else asked
