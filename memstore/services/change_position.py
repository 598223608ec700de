"""The current end of a tenant's change log, as a ``store.changes(after=...)`` position.

Why: ``store.changes(after=None)`` fixes where it starts on its first read, inside
the iteration, which its caller cannot observe without waiting for a change. A
caller that must be listening *before* it answers someone (the MCP server before
it confirms a subscription) reads this position first and passes it as
``after=``: every change committed after this read is then delivered.
The position format is the documented ``"<epoch>:<n>"`` of
:mod:`memstore.services.changes`.
"""

from __future__ import annotations

from memstore.core.tenancy import storage_user_id
from memstore.db.unit import Database
from memstore.repositories.changes import ChangeLogRepository

__all__ = ["change_position"]


async def change_position(db: Database, user_id: str | None) -> str:
    """The position of the tenant's newest change; ``""`` while it has no change log.

    ``""`` (the oldest retained change) is right for a tenant without a log: every
    change it will have is committed after this read.
    """
    user = storage_user_id(user_id)
    async with db.read(user) as session:
        head = await ChangeLogRepository(session=session).head(user)
    return "" if head is None else f"{head.epoch}:{head.last_seq}"
