"""Gathering one turn's candidates from the services, then packing them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from memstore.core.validation import check_limit
from memstore.errors import InvalidInput
from memstore.recall.hybrid import one_embedding_per_query
from memstore.recall.relevance import check_min_score
from memstore.services.agent.access import access_prior
from memstore.services.agent.context import (
    DEFAULT_MESSAGE_OVERHEAD,
    Context,
    ContextItem,
    ItemKind,
    pack,
)
from memstore.services.agent.memory import AgentMemory
from memstore.services.agent.ranking import merge_by_score
from memstore.services.agent.tokens import CounterLike, as_counter
from memstore.telemetry import set_attributes, span
from memstore.types import Episode, EpisodeMatch, Fact, FactMatch, MemoryBlock, Message

__all__ = [
    "MAX_CONTEXT_TOKENS",
    "MAX_RECALLED",
    "ContextRequest",
    "block_item",
    "build_context",
    "episode_item",
    "fact_item",
]

MAX_CONTEXT_TOKENS = 2_000_000
# With a count limit, recall over-fetches by this factor so the access prior can
# re-rank a little.
_OVERFETCH = 2
# Without one, the budget decides how many facts and episodes a context holds:
# recall first asks for as many as would fit at about this many tokens each,
# and asks again for twice as many while the last one recalled still fitted
# (a wrong guess costs another recall, never a different context) ...
_TOKENS_PER_ITEM = 40
# ... up to this many of each kind.
MAX_RECALLED = 1_000


def block_item(block: MemoryBlock, **kw: Any) -> ContextItem:
    return ContextItem(
        id=f"block:{block.name}", kind=ItemKind.BLOCK, text=f"{block.name}: {block.content}", **kw
    )


def fact_text(fact: Fact) -> str:
    text = f"{fact.subject} {fact.predicate} {fact.object}"
    notes = []
    if fact.confidence < 1.0:
        notes.append(f"confidence {fact.confidence:.2f}")
    if fact.valid_from is not None:
        notes.append(f"since {fact.valid_from:%Y-%m-%d}")
    if fact.valid_to is not None:
        notes.append(f"until {fact.valid_to:%Y-%m-%d}")
    return f"{text} ({'; '.join(notes)})" if notes else text


def fact_item(fact: Fact, **kw: Any) -> ContextItem:
    return ContextItem(id=f"fact:{fact.fact_id}", kind=ItemKind.FACT, text=fact_text(fact), **kw)


def turn_text(episode: Episode) -> str:
    """What was said in the turn, each side labelled with its role."""
    return " | ".join(
        f"{who}: {said}"
        for who, said in (("user", episode.input), ("assistant", episode.output))
        if said
    )


def turn_line(episode: Episode) -> str:
    """The turn as a context shows it: ``what the user said → what the assistant
    answered`` (the section title names the roles once)."""
    if episode.input and episode.output:
        return f"{episode.input} → {episode.output}"
    return f"→ {episode.output}" if episode.output else episode.input


def episode_text(episode: Episode) -> str:
    """The turn with its time and session, for a line read on its own (search results)."""
    return f"{episode.occurred_at:%Y-%m-%d %H:%M} (session {episode.session_id}) " + turn_text(
        episode
    )


def episode_item(episode: Episode, **kw: Any) -> ContextItem:
    """An episode as a context item: its turn, listed under its session's date."""
    return ContextItem(
        id=f"episode:{episode.id}",
        kind=ItemKind.EPISODE,
        text=turn_line(episode),
        occurred_at=episode.occurred_at,
        session_id=episode.session_id,
        **kw,
    )


@dataclass(frozen=True, kw_only=True)
class ContextRequest:
    """The arguments of ``context``: whose memory, for which turn, in how many tokens."""

    user_id: str | None = None
    session_id: str | None = None
    query: str = ""
    max_tokens: int = 2_000
    counter: CounterLike | None = None
    fact_limit: int | None = None
    episode_limit: int | None = None
    message_limit: int = 20
    keep_recent: int = 4
    min_score: float | None = None


async def build_context(
    memory: AgentMemory,
    request: ContextRequest,
    *,
    message_overhead: int = DEFAULT_MESSAGE_OVERHEAD,
) -> Context:
    # The fact and the episode recalls (and any second round of them) share the query's vector.
    with one_embedding_per_query():
        return await _build_context(memory, request, message_overhead=message_overhead)


async def _build_context(
    memory: AgentMemory, request: ContextRequest, *, message_overhead: int
) -> Context:
    user_id, session_id, query = request.user_id, request.session_id, request.query
    max_tokens, min_score = request.max_tokens, request.min_score
    fact_limit, episode_limit = request.fact_limit, request.episode_limit
    message_limit, keep_recent = request.message_limit, request.keep_recent
    check_limit("max_tokens", max_tokens, maximum=MAX_CONTEXT_TOKENS)
    if fact_limit is not None:
        check_limit("fact_limit", fact_limit, maximum=MAX_RECALLED)
    if episode_limit is not None:
        check_limit("episode_limit", episode_limit, maximum=MAX_RECALLED)
    check_limit("message_limit", message_limit, maximum=1_000)
    if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
        raise InvalidInput("keep_recent must be a non-negative integer")
    counter = as_counter(request.counter)
    # Checked here too: the recalls below run concurrently with other reads.
    check_min_score(min_score)

    async def no_messages() -> list[Message]:
        return []

    # This session's own turns are its messages, not past episodes: recall asks
    # for that many more.
    own_turns = message_limit // 2 + 1 if session_id is not None else 0
    guess = min(MAX_RECALLED, max(10, max_tokens // _TOKENS_PER_ITEM))
    want_facts = fact_limit * _OVERFETCH if fact_limit is not None else guess
    want_episodes = (episode_limit * _OVERFETCH if episode_limit is not None else guess) + own_turns

    # Gathering candidates is not "using" them: only what is packed is counted.
    # The reads are independent, so they run concurrently (each on its own
    # connection); the tasks inherit the unrecorded-reads setting.
    with memory.reads_unrecorded(), span("memstore.context.gather"):
        blocks, facts, matches, messages = await asyncio.gather(
            memory.blocks.working(user_id=user_id),
            memory.facts.recall_facts_scored(
                query, user_id=user_id, limit=want_facts, min_score=min_score
            ),
            memory.episodes.recall_scored(
                query, user_id=user_id, limit=want_episodes, min_score=min_score
            ),
            memory.episodes.session_messages(session_id, user_id=user_id, limit=message_limit)
            if session_id is not None
            else no_messages(),
        )
    message_items = [
        ContextItem(
            id=f"episode:{m.episode_id}",
            kind=ItemKind.MESSAGE,
            text=m.content,
            role=str(m.role),
            order=n,
        )
        for n, m in enumerate(messages)
    ]
    newest_first = list(reversed(message_items))
    first = [block_item(b, order=n) for n, b in enumerate(blocks)] + newest_first[:keep_recent]
    last = newest_first[keep_recent:]

    while True:
        recalled = await _ranked_items(
            memory,
            user_id=user_id,
            facts=facts,
            episodes=[m for m in matches if m.episode.session_id != session_id],
            fact_limit=fact_limit,
            episode_limit=episode_limit,
        )
        candidates = first + recalled + last
        with span("memstore.context.pack", {"memstore.candidates": len(candidates)}):
            context = pack(
                candidates,
                max_tokens,
                counter=counter,
                message_overhead=message_overhead,
            )
        # Without a count limit, a kind whose last recalled item still fitted may
        # have more that fit: recall twice as many and pack again.
        packed = set(context.ids)
        more_facts = (
            fact_limit is None
            and len(facts) == want_facts < MAX_RECALLED
            and _last_fitted(recalled, ItemKind.FACT, packed)
        )
        more_episodes = (
            episode_limit is None
            and len(matches) == want_episodes < MAX_RECALLED + own_turns
            and _last_fitted(recalled, ItemKind.EPISODE, packed)
        )
        if not (more_facts or more_episodes):
            break
        with memory.reads_unrecorded():
            if more_facts:
                want_facts = min(MAX_RECALLED, want_facts * 2)
                facts = await memory.facts.recall_facts_scored(
                    query, user_id=user_id, limit=want_facts, min_score=min_score
                )
            if more_episodes:
                want_episodes = min(MAX_RECALLED, (want_episodes - own_turns) * 2) + own_turns
                matches = await memory.episodes.recall_scored(
                    query, user_id=user_id, limit=want_episodes, min_score=min_score
                )

    for kind in (ItemKind.BLOCK, ItemKind.FACT, ItemKind.EPISODE):
        memory.access.record_access(
            str(kind), [i.id.split(":", 1)[1] for i in context.of_kind(kind)], user_id=user_id
        )
    set_attributes(
        {
            "memstore.candidates": len(candidates),
            "memstore.context.items": len(context.items),
            "memstore.context.budget_tokens": max_tokens,
            "memstore.context.used_tokens": context.used_tokens,
        }
    )
    return context


def _last_fitted(items: list[ContextItem], kind: ItemKind, packed: set[str]) -> bool:
    """Whether the lowest-priority item of ``kind`` was packed (or none was recalled:
    a full recall of only this session's own turns)."""
    of_kind = [i for i in items if i.kind is kind]
    return not of_kind or of_kind[-1].id in packed


async def _ranked_items(
    memory: AgentMemory,
    *,
    user_id: str | None,
    facts: list[FactMatch],
    episodes: list[EpisodeMatch],
    fact_limit: int | None,
    episode_limit: int | None,
) -> list[ContextItem]:
    """Facts and episodes as context items in packing order, ``score`` their relevance.

    Each kind keeps recall's ranking, re-ranked slightly by the access prior;
    the two are merged by relevance (one scale for both kinds).
    """
    fact_counts, episode_counts = await asyncio.gather(
        memory.access.access_counts(
            "fact", [m.fact.fact_id for m in facts if m.fact.fact_id], user_id=user_id
        ),
        memory.access.access_counts("episode", [m.episode.id for m in episodes], user_id=user_id),
    )
    # A reciprocal-rank score keeps the facts' order unless access frequency
    # separates near neighbours.
    ranked_facts = sorted(
        (
            (1.0 / (1 + rank) + access_prior(fact_counts.get(m.fact.fact_id or "", 0)), rank, m)
            for rank, m in enumerate(facts)
        ),
        key=lambda t: (-t[0], t[1]),
    )[:fact_limit]
    # Ranking scores are min-max normalised over the candidates first, so the
    # prior stays small whatever scale (or sign: hybrid recall fuses z-scores)
    # the ranking uses, and exact ties stay ties for the prior to break.
    ranking = [m.parts.get("ranking", 0.0) for m in episodes]
    low, high = min(ranking, default=0.0), max(ranking, default=0.0)

    def normalised(value: float) -> float:
        return (value - low) / (high - low) if high > low else 1.0

    ranked_episodes = sorted(
        (
            (
                normalised(value) + access_prior(episode_counts.get(m.episode.id, 0)),
                rank,
                m,
            )
            for rank, (value, m) in enumerate(zip(ranking, episodes, strict=True))
        ),
        key=lambda t: (-t[0], t[1]),
    )[:episode_limit]
    fact_items = [
        fact_item(m.fact, order=n, score=m.score) for n, (_, _, m) in enumerate(ranked_facts)
    ]
    episode_items = [
        episode_item(m.episode, order=n, score=m.score)
        for n, (_, _, m) in enumerate(ranked_episodes)
    ]
    return merge_by_score([fact_items, episode_items], lambda i: i.score or 0.0)
