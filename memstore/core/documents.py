"""The text each row is embedded and keyword-indexed from (one definition for all writers)."""

from __future__ import annotations

from datetime import UTC, datetime

from memstore.types import Episode, Fact

__all__ = ["date_words", "episode_search_text", "episode_text", "fact_text"]


def episode_text(episode: Episode) -> str:
    """What an episode's embedding is computed from."""
    return "\n".join(part for part in (episode.input, episode.output) if part)


def episode_search_text(episode: Episode) -> str:
    """What keyword search indexes: the text plus the day it happened, in words."""
    return f"{episode_text(episode)}\n{date_words(episode.occurred_at)}"


def fact_text(fact: Fact) -> str:
    """Embedded text of a fact; the FTS indexes hold the same words."""
    return f"{fact.subject} {fact.predicate.replace('_', ' ')} {fact.object}"


_MONTHS = (
    "January February March April May June July August September October November December"
).split()


def date_words(moment: datetime) -> str:
    """``8 May 2023``: lets keyword search match dates written in a query."""
    day = moment.astimezone(UTC)
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"
