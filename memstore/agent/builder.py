"""Gathering one turn's candidates through the memory store's public API, then packing them."""

from __future__ import annotations

import asyncio
from typing import Any

from memstore.agent.access import access_prior
from memstore.agent.context import (
    DEFAULT_MESSAGE_OVERHEAD,
    Context,
    ContextItem,
    ItemKind,
    pack,
)
from memstore.agent.memory import AgentMemory
from memstore.agent.tokens import TokenCounter
from memstore.errors import InvalidInput
from memstore.recall.relevance import check_min_score
from memstore.types import Episode, Fact, MemoryBlock, Message
from memstore.validation import check_limit

__all__ = ["MAX_CONTEXT_TOKENS", "block_item", "build_context", "episode_item", "fact_item"]

MAX_CONTEXT_TOKENS = 2_000_000
# Recall over-fetches by this factor so the access prior can re-rank a little.
_OVERFETCH = 2


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


def episode_text(episode: Episode) -> str:
    turn = " | ".join(
        f"{who}: {said}"
        for who, said in (("user", episode.input), ("assistant", episode.output))
        if said
    )
    return f"{episode.occurred_at:%Y-%m-%d %H:%M} (session {episode.session_id}) {turn}"


def episode_item(episode: Episode, **kw: Any) -> ContextItem:
    return ContextItem(
        id=f"episode:{episode.id}", kind=ItemKind.EPISODE, text=episode_text(episode), **kw
    )


async def build_context(
    store: AgentMemory,
    *,
    user_id: str | None,
    session_id: str | None,
    query: str,
    max_tokens: int,
    counter: TokenCounter | None = None,
    fact_limit: int = 10,
    episode_limit: int = 5,
    message_limit: int = 20,
    keep_recent: int = 4,
    message_overhead: int = DEFAULT_MESSAGE_OVERHEAD,
    min_score: float | None = None,
) -> Context:
    check_limit("max_tokens", max_tokens, maximum=MAX_CONTEXT_TOKENS)
    check_limit("fact_limit", fact_limit, maximum=1_000)
    check_limit("episode_limit", episode_limit, maximum=1_000)
    check_limit("message_limit", message_limit, maximum=1_000)
    if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
        raise InvalidInput("keep_recent must be a non-negative integer")
    if counter is not None and not isinstance(counter, TokenCounter):
        raise InvalidInput("counter must have a count(text) -> int method")
    # Checked here too: the recalls below run concurrently with other reads.
    check_min_score(min_score)

    async def no_messages() -> list[Message]:
        return []

    # Gathering candidates is not "using" them: only what is packed is counted.
    # The reads are independent, so they run concurrently (each on its own
    # connection); the tasks inherit the unrecorded-reads setting.
    with store.reads_unrecorded():
        own_turns = message_limit // 2 + 1 if session_id is not None else 0
        blocks, facts, matches, messages = await asyncio.gather(
            store.working(user_id=user_id),
            store.recall_facts(
                query, user_id=user_id, limit=fact_limit * _OVERFETCH, min_score=min_score
            ),
            store.recall_scored(
                query,
                user_id=user_id,
                limit=episode_limit * _OVERFETCH + own_turns,
                min_score=min_score,
            ),
            store.session_messages(session_id, user_id=user_id, limit=message_limit)
            if session_id is not None
            else no_messages(),
        )

    episodes = [m for m in matches if m.episode.session_id != session_id]
    fact_counts, episode_counts = await asyncio.gather(
        store.access_counts("fact", [f.fact_id for f in facts if f.fact_id], user_id=user_id),
        store.access_counts("episode", [m.episode.id for m in episodes], user_id=user_id),
    )
    # recall_facts returns a ranking without scores; a reciprocal-rank score
    # keeps its order unless access frequency separates near neighbours.
    scored_facts = sorted(
        (
            (1.0 / (1 + rank) + access_prior(fact_counts.get(f.fact_id or "", 0)), rank, f)
            for rank, f in enumerate(facts)
        ),
        key=lambda t: (-t[0], t[1]),
    )[:fact_limit]
    # Scores are min-max normalised over the candidates first, so the prior stays
    # small whatever scale (or sign: hybrid recall fuses z-scores) recall uses,
    # and exact ties stay ties for the prior to break.
    scores = [m.score for m in episodes]
    low, high = min(scores, default=0.0), max(scores, default=0.0)

    def relevance(rank: int, score: float) -> float:
        return (score - low) / (high - low) if high > low else 1.0

    scored_episodes = sorted(
        (
            (
                relevance(rank, m.score) + access_prior(episode_counts.get(m.episode.id, 0)),
                rank,
                m.episode,
            )
            for rank, m in enumerate(episodes)
        ),
        key=lambda t: (-t[0], t[1]),
    )[:episode_limit]

    candidates: list[ContextItem] = [block_item(b, order=n) for n, b in enumerate(blocks)]
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
    candidates += newest_first[:keep_recent]
    candidates += [fact_item(f, order=n, score=s) for n, (s, _, f) in enumerate(scored_facts)]
    candidates += [episode_item(e, order=n, score=s) for n, (s, _, e) in enumerate(scored_episodes)]
    candidates += newest_first[keep_recent:]

    context = pack(candidates, max_tokens, counter=counter, message_overhead=message_overhead)
    for kind in (ItemKind.BLOCK, ItemKind.FACT, ItemKind.EPISODE):
        store.record_access(
            str(kind), [i.id.split(":", 1)[1] for i in context.of_kind(kind)], user_id=user_id
        )
    return context
