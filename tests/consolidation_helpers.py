"""Shared helpers of the consolidation tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from memstore import Episode
from memstore.models import EpisodeConsolidationRow, FactRow
from tests.store_parts import own_engine

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
MARCH = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

# Statements whose facts exercise add, reinforce and supersede across a user's history.
LINES = [
    "Hi, I'm {name}. I live in Paris.",
    "I work at Acme as well, and I love jazz.",
    "I love jazz.",
    "I moved to London last week.",
    "I have a dog named Rex.",
    "I hate traffic.",
    "I joined Globex.",
    "I love hiking.",
    "I relocated to Berlin.",
    "I love jazz.",
    "My sister is called Emma.",
    "I'm allergic to peanuts.",
]


def user_episodes(user: str, count: int, *, start: datetime = T0) -> list[Episode]:
    return [
        Episode(
            user_id=user,
            session_id=f"{user}-s{i // 10}",
            occurred_at=start + timedelta(hours=6 * i),
            input=LINES[i % len(LINES)].format(name=user.title()),
            output="Noted.",
        )
        for i in range(count)
    ]


async def current_facts(url: str) -> list[tuple[Any, ...]]:
    """Every tenant's current fact rows as comparable tuples (ids and record times left out)."""
    async with own_engine(url) as engine, engine.connect() as conn:
        rows = (await conn.execute(select(FactRow).where(FactRow.superseded_at.is_(None)))).all()
    return sorted(
        (
            r.user_id,
            r.subject,
            r.predicate,
            r.object,
            r.valid_from,
            r.valid_to,
            round(r.confidence, 9),
            tuple(sorted(r.sources)),
        )
        for r in rows
    )


async def consolidation_marks(url: str) -> dict[str, int]:
    """Per-episode count of consolidation marks (must be exactly 1 each)."""
    async with own_engine(url) as engine, engine.connect() as conn:
        rows = (
            await conn.execute(
                select(EpisodeConsolidationRow.episode_id, func.count())
                .where(EpisodeConsolidationRow.consolidated_at.is_not(None))
                .group_by(EpisodeConsolidationRow.episode_id)
            )
        ).all()
    return {episode_id: n for episode_id, n in rows}


async def reset_consolidation(url: str) -> None:
    """Forget every fact and mark, keeping the episodes (to re-run from scratch)."""
    async with own_engine(url) as engine, engine.begin() as conn:
        await conn.execute(EpisodeConsolidationRow.__table__.delete())
        await conn.execute(FactRow.__table__.delete())
