"""LLM extractor for any OpenAI-compatible chat-completions endpoint (``memstore[llm]``).

The official ``openai`` SDK does the HTTP: connection pooling, auth, the wire
format and its error classes; the answer is read raw, up to a size bound, and
parsed here. Each attempt has one deadline, ``timeout``, for the whole request.
The model is asked for
``{"facts": [{"episode_id", "subject", "predicate", "object", "confidence"}]}``
as JSON-schema structured output; an endpoint that rejects ``json_schema``
(HTTP 400/422) is asked for a plain JSON object from then on. Either way every
item is validated here, since an endpoint may accept a schema and not obey it;
one bad item rejects the whole answer. Timeouts, connection errors, HTTP
429/5xx and unparseable answers are retried ``max_retries`` times with
exponential backoff; then :class:`LLMEndpointError` (transport/HTTP) or
:class:`LLMResponseError` (content) is raised and the batch stays
unconsolidated — nothing of it is written. Other 4xx answers (bad key, unknown
model) fail at once. The API key is only ever sent as the bearer token: no log
line, message or exception cause holds it, whatever the endpoint echoes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from memstore.core.predicates import normalize_predicate
from memstore.core.tenancy import speaker_name
from memstore.errors import InvalidInput
from memstore.outbound.retry import next_delay
from memstore.outbound.secrets import ProviderFault, Scrubber
from memstore.services.consolidation.errors import LLMResponseError
from memstore.services.consolidation.llm_answer import Failure, content_of, failure_of
from memstore.services.consolidation.rules import ANONYMOUS_SUBJECT
from memstore.services.consolidation.types import CandidateFact
from memstore.types import Episode

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.shared_params import ResponseFormatJSONObject, ResponseFormatJSONSchema

__all__ = ["SYSTEM_PROMPT", "LLMConfig", "LLMExtractor"]

MAX_FIELD_CHARS = 2_000
MAX_FACTS_PER_EPISODE = 25
# An answer's bytes: a model's output is a few thousand tokens; the envelope little.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
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
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    max_retries: int = 2
    backoff: float = 0.5
    max_response_bytes: int = MAX_RESPONSE_BYTES

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
        if self.max_retries < 0 or not 0 <= self.backoff < math.inf:
            raise InvalidInput("LLM max_retries and backoff must not be negative")
        if self.max_response_bytes < 1:
            raise InvalidInput("LLM max_response_bytes must be positive")


def _facts_schema(episode_ids: Sequence[str]) -> ResponseFormatJSONSchema:
    # Strict mode wants every property required and no others; the episode ids are
    # an enum, so a model that honours the schema cannot name a turn not in the batch.
    fact = {
        "type": "object",
        "properties": {
            "episode_id": {"type": "string", "enum": list(episode_ids)},
            "subject": {"type": "string"},
            "predicate": {"type": "string"},
            "object": {"type": "string"},
            "confidence": {"type": "number"},
        },
        "required": ["episode_id", "subject", "predicate", "object", "confidence"],
        "additionalProperties": False,
    }
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "memstore_facts",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"facts": {"type": "array", "items": fact}},
                "required": ["facts"],
                "additionalProperties": False,
            },
        },
    }


_JSON_OBJECT: ResponseFormatJSONObject = {"type": "json_object"}


class LLMExtractor:
    """Asks a chat-completions model for facts; see the module docstring for failures."""

    name = "llm"

    def __init__(
        self, config: LLMConfig | None = None, *, anonymous_subject: str = ANONYMOUS_SUBJECT
    ) -> None:
        try:
            import openai  # noqa: F401 - the optional extra, checked before any batch is claimed
        except ImportError as error:
            raise ImportError(
                "LLMExtractor needs the optional extra: pip install 'memstore[llm]'",
                name="openai",
            ) from error
        self.config = config or LLMConfig.from_env()
        self.anonymous_subject = anonymous_subject
        # None until an endpoint has answered a json_schema request (True) or refused it.
        self.structured_output: bool | None = None

    # ---- HTTP ----------------------------------------------------------------------

    def _client(self) -> AsyncOpenAI:
        import httpx
        from openai import AsyncOpenAI

        from memstore.outbound.transport import BoundedTransport

        # Retries stay in _call, not in the SDK (max_retries=0): an unparseable answer
        # must share one budget, backoff and log line with a 503, and the SDK sees only HTTP.
        http = httpx.AsyncClient(
            transport=BoundedTransport(self.config.max_response_bytes),
            timeout=self.config.timeout,
            follow_redirects=True,  # as the SDK's own client does
        )
        return AsyncOpenAI(
            base_url=self.config.base_url,
            # Never None: the SDK would fall back to $OPENAI_API_KEY; without a key the
            # request omits Authorization (_call_once), so the placeholder is never sent.
            api_key=self.config.api_key or "unused",
            timeout=self.config.timeout,
            max_retries=0,
            # An httpx client: every supported SDK version takes one (3.x's own is httpx2).
            http_client=cast(Any, http),
        )

    def _scrubber(self) -> Scrubber:
        password = urlsplit(self.config.base_url).password
        return Scrubber([self.config.api_key, password])

    def _messages(self, episodes: Sequence[Episode]) -> list[ChatCompletionMessageParam]:
        turns = [
            {
                "episode_id": e.id,
                "occurred_at": e.occurred_at.isoformat(),
                "user": e.input,
                "assistant": e.output,
            }
            for e in episodes
        ]
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps({"turns": turns}, ensure_ascii=False)},
        ]

    async def _call_once(self, client: AsyncOpenAI, episodes: Sequence[Episode]) -> str | Failure:
        import httpx
        import openai

        from memstore.outbound.transport import BadAnswer, bad_answer_in

        # A keyless local endpoint gets no bearer header at all.
        no_auth = {} if self.config.api_key else {"Authorization": openai.Omit()}
        structured = self.structured_output is not False
        response_format: ResponseFormatJSONSchema | ResponseFormatJSONObject
        response_format = _facts_schema([e.id for e in episodes]) if structured else _JSON_OBJECT
        scrub = self._scrubber()
        try:
            async with asyncio.timeout(self.config.timeout):
                raw = await client.chat.completions.with_raw_response.create(
                    model=self.config.model,
                    temperature=0,
                    messages=self._messages(episodes),
                    response_format=response_format,
                    extra_headers=no_auth,
                )
                content = raw.content
        # httpx's own errors: the SDK reads an error's body outside its own handlers.
        except (TimeoutError, openai.OpenAIError, httpx.HTTPError, BadAnswer) as error:
            if (
                structured
                and isinstance(error, openai.APIStatusError)
                and error.status_code in (400, 422)
            ):
                # This endpoint does not take json_schema: plain JSON mode from now on.
                logger.info("LLM endpoint refused json_schema output; using json_object")
                self.structured_output = False
                failure = None
            else:
                failure = failure_of(error, scrub, self.config.timeout, bad_answer_in(error))
                failure.error.__cause__ = ProviderFault.of(error, scrub)
        else:
            if structured:
                self.structured_output = True
            return content_of(content)
        if failure is None:
            return await self._call_once(client, episodes)
        return failure

    async def _call(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        attempts = self.config.max_retries + 1
        async with self._client() as client:
            for attempt in range(attempts):
                answer = await self._call_once(client, episodes)
                outcome = self._parse(answer, episodes) if isinstance(answer, str) else answer
                if not isinstance(outcome, Failure):
                    return outcome
                failure = outcome
                if not failure.retry or attempt + 1 >= attempts:
                    break
                delay = next_delay(self.config.backoff, attempt, failure.retry_after)
                logger.warning(
                    "LLM extractor attempt %d of %d failed (%s: %s); retrying in %.2f s",
                    attempt + 1,
                    attempts,
                    type(failure.error).__name__,
                    failure.error,
                    delay,
                )
                await asyncio.sleep(delay)
        error = failure.error
        if failure.retry:
            error.args = (f"{error} (after {attempts} attempts)",)
        # Raised outside any handler: the SDK's exception (which may quote the key) is no
        # context of it; its cause is the scrubbed copy.
        raise error from error.__cause__

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        if not episodes:
            return []
        return await self._call(list(episodes))

    # ---- validation ----------------------------------------------------------------

    def _parse(self, content: str, episodes: Sequence[Episode]) -> list[CandidateFact] | Failure:
        try:
            document = json.loads(content)
        except (ValueError, RecursionError) as error:
            why = self._scrubber()(error, limit=200)
            return Failure(LLMResponseError(f"LLM answer is not valid JSON: {why}"))
        if not isinstance(document, dict) or not isinstance(document.get("facts"), list):
            return Failure(LLMResponseError('LLM answer is not an object with a "facts" list'))
        items = document["facts"]
        if len(items) > MAX_FACTS_PER_EPISODE * len(episodes):
            raise LLMResponseError(f"LLM answer has {len(items)} facts; too many for the batch")
        by_id = {e.id: e for e in episodes}
        return [self._candidate(i, item, by_id) for i, item in enumerate(items)]

    def _candidate(self, index: int, item: object, by_id: Mapping[str, Episode]) -> CandidateFact:
        def bad(why: str) -> LLMResponseError:
            shown = self._scrubber()(json.dumps(item), limit=200)
            return LLMResponseError(f"LLM fact #{index} {why}: {shown}")

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
            subject = speaker_name(episode.user_id, self.anonymous_subject)
        return CandidateFact(
            subject=subject,
            predicate=predicate,
            object=fields["object"],
            confidence=float(confidence),
            valid_from=episode.occurred_at,
            episode_id=episode.id,
        )
