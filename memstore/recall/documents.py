"""The text each row is embedded and keyword-indexed from (one definition for all writers)."""

from __future__ import annotations

from memstore.recall.lexical import date_words
from memstore.types import Episode, Fact

__all__ = ["episode_search_text", "episode_text", "fact_text"]


def episode_text(episode: Episode) -> str:
    """What an episode's embedding is computed from."""
    return "\n".join(part for part in (episode.input, episode.output) if part)


def episode_search_text(episode: Episode) -> str:
    """What keyword search indexes: the text plus the day it happened, in words."""
    return f"{episode_text(episode)}\n{date_words(episode.occurred_at)}"


def fact_text(fact: Fact) -> str:
    """Embedded text of a fact; the FTS indexes hold the same words."""
    return f"{fact.subject} {fact.predicate.replace('_', ' ')} {fact.object}"
