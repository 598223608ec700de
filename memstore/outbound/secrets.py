"""Keys out of every text an endpoint's answer can reach: exceptions, warnings, log lines.

An endpoint (or a proxy before it) may echo the request into its answer, the
``Authorization`` header included, whole or in part (OpenAI's own refusal shows the
key's first and last characters). Whatever comes from outside goes through a
:class:`Scrubber` before it is put into a message: it removes the known keys, any word
sharing a run of :data:`DISTINCTIVE` characters with one, and anything shaped like a
credential (``Bearer ...``, ``sk-...``, ``api_key=...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["DISTINCTIVE", "REDACTED", "ProviderFault", "Scrubber"]

REDACTED = "[redacted]"
# Characters of a key that, found together in a word, make that word part of the key.
DISTINCTIVE = 5
# A key shorter than this cannot be told from ordinary text; such keys are not hunted.
_SHORTEST_KEY = 4
_SHAPES = (
    re.compile(r"(?i)\b(?:bearer|basic)\s+[^\s\"',;}\]]+"),
    re.compile(r"\b(?:sk|pk|rk|ak)-[^\s\"',;}\]]{4,}"),
    re.compile(
        r"(?i)((?:api[-_ ]?key|access[-_ ]?token|token|authorization|password|secret)"
        r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}\]]+"
    ),
)
_WORD = re.compile(r"\S+")


class Scrubber:
    """Removes ``keys`` (and credential-shaped text) from whatever text it is given."""

    def __init__(self, keys: Iterable[str | None] = ()) -> None:
        found = {k for k in keys if k and len(k.strip()) >= _SHORTEST_KEY}
        # Longest first: a key that contains another is removed whole.
        self._keys = tuple(sorted(found, key=len, reverse=True))
        pieces: set[str] = set()
        for key in self._keys:
            size = min(len(key), DISTINCTIVE)
            pieces.update(key[i : i + size].casefold() for i in range(len(key) - size + 1))
        self._pieces = frozenset(pieces)

    def with_keys(self, keys: Iterable[str | None]) -> Scrubber:
        return Scrubber([*self._keys, *keys])

    def __call__(self, text: object, limit: int = 300) -> str:
        """``text`` as a string without any key, at most ``limit`` characters."""
        shown = str(text)[: limit * 4]  # bounded work on an endless body
        for shape in _SHAPES:
            shown = shape.sub(lambda m: (m.group(1) if m.groups() else "") + REDACTED, shown)
        for key in self._keys:
            shown = shown.replace(key, REDACTED)
        if self._pieces:
            shown = _WORD.sub(self._word, shown)
        return shown if len(shown) <= limit else shown[:limit] + "..."

    def _word(self, match: re.Match[str]) -> str:
        word = match.group(0).casefold()
        return REDACTED if any(piece in word for piece in self._pieces) else match.group(0)

    def __repr__(self) -> str:
        return f"Scrubber({len(self._keys)} keys)"


class ProviderFault(Exception):
    """What an endpoint's client raised, as scrubbed text: the cause of the
    :class:`~memstore.errors.MemstoreError` a provider raises, in place of the
    client's own exception, whose text and attributes may hold the endpoint's echo."""

    @classmethod
    def of(cls, error: BaseException, scrub: Scrubber) -> ProviderFault:
        kind = type(error)
        return cls(f"{kind.__module__}.{kind.__qualname__}: {scrub(error, limit=500)}")
