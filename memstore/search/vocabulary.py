"""A tenant's words, as keyword search sees them: what query expansion may add.

Keyword expansion (memstore/recall/expansion.py) only adds words the tenant's
episodes hold: any other word finds nothing and costs the statement a term. The
words are read from the same text the full-text index holds, split by the one
tokeniser (memstore/core/text.py), so an added word matches as the index does.
"""

from __future__ import annotations

from sqlalchemy import select, text

from memstore.core.text import content_words
from memstore.db.unit import Reader
from memstore.models import EpisodeRow
from memstore.search.tables import row_text

__all__ = ["search_version", "tenant_words"]


async def search_version(session: Reader, user_id: str) -> int | None:
    """SQLite: the tenant's episodes search version (a new one on every write); Postgres: None."""
    if session.get_bind().dialect.name != "sqlite":
        return None
    value = await session.scalar(
        text("SELECT version FROM search_versions WHERE user_id = :u AND tbl = 'episodes'"),
        {"u": user_id},
    )
    return None if value is None else int(value)


async def tenant_words(session: Reader, user_id: str) -> set[str]:
    """The distinct content words of the tenant's episodes."""
    found: set[str] = set()
    stmt = select(row_text(EpisodeRow)).where(EpisodeRow.user_id == user_id)
    for (doc,) in await session.execute(stmt):
        found.update(content_words(doc or ""))
    return found
