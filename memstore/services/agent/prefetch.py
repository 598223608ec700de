"""Prefetch: the items an agent most likely needs before it asks.

1. How the user's last session ended (the "last segment summary"; memstore
   keeps no separate summaries, so the last turn of the most recent session
   other than the current one stands in for it).
2. The most-accessed facts that are still true.
3. The most-accessed episodes.
"""

from __future__ import annotations

from dataclasses import replace

from memstore.core.validation import check_limit
from memstore.errors import NotFound
from memstore.services.agent.builder import episode_item, fact_item
from memstore.services.agent.context import ContextItem
from memstore.services.agent.memory import AgentMemory

__all__ = ["prefetch_items"]


async def prefetch_items(
    memory: AgentMemory, *, user_id: str | None, session_id: str | None = None, limit: int = 5
) -> list[ContextItem]:
    """Hottest items first, each at most once; ``limit`` per heuristic."""
    check_limit("limit", limit, maximum=100)
    items: list[ContextItem] = []
    seen: set[str] = set()

    def add(item: ContextItem) -> None:
        if item.id not in seen:
            seen.add(item.id)
            items.append(replace(item, priority=len(items)))

    # Prefetching is a prediction, not a use: it must not feed its own counts.
    with memory.reads_unrecorded():
        profile = await memory.tenants.profile(user_id=user_id)
        last = next((s for s in profile.recent_sessions if s != session_id), None)
        if last is not None:
            turns = await memory.episodes.session_messages(last, user_id=user_id, limit=2)
            if turns and turns[-1].episode_id is not None:
                episode = await memory.episodes.get_episode(turns[-1].episode_id, user_id=user_id)
                add(episode_item(episode, meta={"reason": "last_session"}))

        now = memory.now()
        for stat in await memory.access.access_stats(user_id=user_id, kind="fact", limit=limit * 2):
            versions = await memory.facts.fact_history(user_id=user_id, fact_id=stat.item_id)
            current = [
                v
                for v in versions
                if v.superseded_at is None
                and (v.valid_from is None or v.valid_from <= now)
                and (v.valid_to is None or now < v.valid_to)
            ]
            if current and sum(i.kind == "fact" for i in items) < limit:
                add(
                    fact_item(
                        current[-1],
                        meta={"reason": "most_accessed", "access_count": stat.access_count},
                    )
                )

        for stat in await memory.access.access_stats(user_id=user_id, kind="episode", limit=limit):
            try:
                episode = await memory.episodes.get_episode(stat.item_id, user_id=user_id)
            except NotFound:  # forgotten since it was counted
                continue
            add(
                episode_item(
                    episode, meta={"reason": "most_accessed", "access_count": stat.access_count}
                )
            )
    return items
