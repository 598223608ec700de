"""LLM extractor for any OpenAI-compatible chat-completions endpoint (standard library only).

The model is asked for strict JSON, ``{"facts": [{"episode_id", "subject",
"predicate", "object", "confidence"}]}``. Every item is validated; one bad item
rejects the whole answer. Timeouts, connection errors, HTTP 429/5xx and
unparseable answers are retried ``max_retries`` times with exponential
backoff; then :class:`LLMEndpointError` (transport/HTTP) or
:class:`LLMResponseError` (content) is raised and the batch stays
unconsolidated — nothing of it is written. Other 4xx answers (bad key, unknown
model) fail at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstore.core.predicates import normalize_predicate
from memstore.errors import InvalidInput
from memstore.services.consolidation.errors import LLMEndpointError, LLMResponseError
from memstore.services.consolidation.rules import ANONYMOUS_SUBJECT
from memstore.services.consolidation.types import CandidateFact
from memstore.types import Episode

__all__ = ["SYSTEM_PROMPT", "LLMConfig", "LLMExtractor"]

MAX_FIELD_CHARS = 2_000
MAX_FACTS_PER_EPISODE = 25
logger = logging.getLogger(__name__)
_SPEAKER_WORDS = frozenset({"user", "the user", "i", "me", "speaker", "the speaker"})

SYSTEM_PROMPT = """\
You extract durable personal facts from conversation turns between a user and an assistant.
Answer with one JSON object and nothing else, exactly of this form:
{"facts": [{"episode_id": "<id of the turn>", "subject": "user", "predicate": "lives_in",
            "object": "Paris", "confidence": 0.9}]}
Rules:
- Only facts the user states about themselves or people and things in their life; never
  facts from the assistant's words alone, questions, hypotheticals or jokes.
- subject is "user" for the user; otherwise the person's or thing's name.
- predicate is short snake_case, preferring: name, lives_in, hometown, born_in, works_at,
  job_title, likes, dislikes, allergic_to, married_to, partner, mother, father, sister,
  brother, son, daughter, friend, boss, pet, owns, plans.
- object is a short phrase; for plans include the date as YYYY-MM-DD when given.
- confidence is a number between 0 and 1.
- If there is nothing to extract, answer {"facts": []}.
"""


@dataclass(frozen=True, kw_only=True)
class LLMConfig:
    """Where and how to call the model. ``from_env`` reads the ``MEMSTORE_LLM_*`` variables."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 30.0
    max_retries: int = 2
    backoff: float = 0.5

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """``MEMSTORE_LLM_BASE_URL`` (else ``OPENAI_BASE_URL``), ``MEMSTORE_LLM_MODEL``,
        ``MEMSTORE_LLM_API_KEY`` (else ``OPENAI_API_KEY``), ``MEMSTORE_LLM_TIMEOUT``,
        ``MEMSTORE_LLM_MAX_RETRIES``; keyword overrides win when not None."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "base_url": env.get("MEMSTORE_LLM_BASE_URL") or env.get("OPENAI_BASE_URL"),
            "model": env.get("MEMSTORE_LLM_MODEL"),
            "api_key": env.get("MEMSTORE_LLM_API_KEY") or env.get("OPENAI_API_KEY"),
        }
        try:
            if env.get("MEMSTORE_LLM_TIMEOUT"):
                values["timeout"] = float(env["MEMSTORE_LLM_TIMEOUT"])
            if env.get("MEMSTORE_LLM_MAX_RETRIES"):
                values["max_retries"] = int(env["MEMSTORE_LLM_MAX_RETRIES"])
        except ValueError as error:
            raise InvalidInput(f"bad MEMSTORE_LLM_* setting: {error}") from error
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values.get("base_url"):
            raise InvalidInput("the LLM extractor needs a base URL (MEMSTORE_LLM_BASE_URL)")
        if not values.get("model"):
            raise InvalidInput("the LLM extractor needs a model name (MEMSTORE_LLM_MODEL)")
        return cls(**values)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise InvalidInput("LLM base URL must start with http:// or https://")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise InvalidInput("LLM timeout must be a positive number of seconds")
        if self.max_retries < 0 or self.backoff < 0:
            raise InvalidInput("LLM max_retries and backoff must not be negative")


class _Retryable(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class LLMExtractor:
    """Asks a chat-completions model for facts; see the module docstring for failures."""

    name = "llm"

    def __init__(
        self, config: LLMConfig | None = None, *, anonymous_subject: str = ANONYMOUS_SUBJECT
    ) -> None:
        self.config = config or LLMConfig.from_env()
        self.anonymous_subject = anonymous_subject

    # ---- HTTP ----------------------------------------------------------------------

    def _request(self, episodes: Sequence[Episode]) -> urllib.request.Request:
        turns = [
            {
                "episode_id": e.id,
                "occurred_at": e.occurred_at.isoformat(),
                "user": e.input,
                "assistant": e.output,
            }
            for e in episodes
        ]
        body = {
            "model": self.config.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": json.dumps({"turns": turns}, ensure_ascii=False)},
            ],
        }
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        return urllib.request.Request(
            url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )

    def _call_once(self, request: urllib.request.Request) -> str:
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read(300).decode(errors="replace")
            failure = LLMEndpointError(f"LLM endpoint answered HTTP {error.code}: {detail}")
            if error.code == 429 or error.code >= 500:
                raise _Retryable(failure) from error
            raise failure from error
        except TimeoutError as error:
            raise _Retryable(
                LLMEndpointError(f"LLM endpoint timed out after {self.config.timeout}s")
            ) from error
        except (urllib.error.URLError, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, TimeoutError | socket.timeout):
                raise _Retryable(
                    LLMEndpointError(f"LLM endpoint timed out after {self.config.timeout}s")
                ) from error
            raise _Retryable(LLMEndpointError(f"LLM endpoint unreachable: {reason}")) from error
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise _Retryable(
                LLMResponseError("LLM endpoint did not answer in the chat-completions format")
            ) from error
        if not isinstance(content, str):
            raise _Retryable(LLMResponseError("LLM answer has no text content"))
        return content

    def _call(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        request = self._request(episodes)
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._parse(self._call_once(request), episodes)
            except _Retryable as retry:
                if attempt + 1 >= attempts:
                    error = retry.error
                    raise type(error)(f"{error} (after {attempts} attempts)") from retry
                delay = self.config.backoff * 2**attempt
                logger.warning(
                    "LLM extractor attempt %d of %d failed (%s: %s); retrying in %.2f s",
                    attempt + 1,
                    attempts,
                    type(retry.error).__name__,
                    retry.error,
                    delay,
                )
                time.sleep(delay)
        raise AssertionError("unreachable")

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        if not episodes:
            return []
        # urllib blocks; a worker thread keeps the event loop (and DB I/O) alive.
        return await asyncio.to_thread(self._call, list(episodes))

    # ---- validation ----------------------------------------------------------------

    def _parse(self, content: str, episodes: Sequence[Episode]) -> list[CandidateFact]:
        try:
            document = json.loads(content)
        except ValueError as error:
            raise _Retryable(LLMResponseError(f"LLM answer is not valid JSON: {error}")) from error
        if not isinstance(document, dict) or not isinstance(document.get("facts"), list):
            raise _Retryable(LLMResponseError('LLM answer is not an object with a "facts" list'))
        items = document["facts"]
        if len(items) > MAX_FACTS_PER_EPISODE * len(episodes):
            raise LLMResponseError(f"LLM answer has {len(items)} facts; too many for the batch")
        by_id = {e.id: e for e in episodes}
        return [self._candidate(i, item, by_id) for i, item in enumerate(items)]

    def _candidate(self, index: int, item: object, by_id: Mapping[str, Episode]) -> CandidateFact:
        def bad(why: str) -> LLMResponseError:
            return LLMResponseError(f"LLM fact #{index} {why}: {json.dumps(item)[:200]}")

        if not isinstance(item, dict):
            raise bad("is not an object")
        episode = by_id.get(item.get("episode_id"))  # type: ignore[arg-type]
        if episode is None:
            raise bad("names no episode of this batch")
        fields = {}
        for key in ("subject", "predicate", "object"):
            value = item.get(key)
            if not isinstance(value, str) or not value.strip() or "\x00" in value:
                raise bad(f"has no usable {key}")
            if len(value) > MAX_FIELD_CHARS:
                raise bad(f"has a {key} longer than {MAX_FIELD_CHARS} characters")
            fields[key] = " ".join(value.split())
        try:
            predicate = normalize_predicate(fields["predicate"])
        except InvalidInput as error:
            raise bad("has an unusable predicate") from error
        confidence = item.get("confidence", 0.5)
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not (0.0 <= confidence <= 1.0)
        ):
            raise bad("has a confidence outside 0..1")
        subject = fields["subject"]
        if subject.casefold() in _SPEAKER_WORDS:
            subject = episode.user_id or self.anonymous_subject
        return CandidateFact(
            subject=subject,
            predicate=predicate,
            object=fields["object"],
            confidence=float(confidence),
            valid_from=episode.occurred_at,
            episode_id=episode.id,
        )
