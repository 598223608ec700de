"""Pinned working blocks with version history and optimistic concurrency."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memstore.core.forwarding import takes_options
from memstore.core.tenancy import TenantId, storage_user_id
from memstore.core.validation import MAX_TEXT_CHARS, check_identifier, check_text
from memstore.errors import InvalidInput, NotFound
from memstore.repositories.blocks import BlockRepository, blocks_in_order
from memstore.repositories.changes import ChangeEntry, ChangeLogRepository
from memstore.services.base import Service
from memstore.types import BlockVersion, ChangeKind, MemoryBlock

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["BlockEdit", "BlockService"]


@dataclass(frozen=True)
class BlockEdit:
    """The arguments of ``update_block`` and ``append_block``: one signature for both."""

    name: str
    content: str
    _: KW_ONLY
    user_id: str | None = None
    expected_version: int | None = None


async def _record(
    session: AsyncSession, user: TenantId, kind: ChangeKind, name: str, now: datetime
) -> None:
    # Last in the transaction: the tenant's change counter stays locked until commit.
    await ChangeLogRepository(session=session).record(user, [ChangeEntry(kind, name)], now=now)


class BlockService(Service):
    """Pinned working blocks with version history and optimistic concurrency."""

    block_char_limit: int

    @property
    def _content_cap(self) -> int:
        # The block limit itself is enforced on the edited content by the repository.
        return max(self.block_char_limit, MAX_TEXT_CHARS)

    async def _write_block(self, args: BlockEdit, edit: Callable[[str], str]) -> MemoryBlock:
        name, expected_version = args.name, args.expected_version
        user = storage_user_id(args.user_id)
        check_identifier("block name", name)
        if expected_version is not None and (
            isinstance(expected_version, bool)
            or not isinstance(expected_version, int)
            or expected_version < 0
        ):
            raise InvalidInput("expected_version must be a non-negative integer")
        async with self.db.write(user) as session:
            block = await BlockRepository(session=session).write(
                user,
                name,
                edit,
                char_limit=self.block_char_limit,
                expected_version=expected_version,
                now=self.db.now(),
            )
            await _record(session, user, ChangeKind.BLOCK_UPDATED, name, self.db.now())
        return block

    @takes_options(BlockEdit)
    async def update_block(self, args: BlockEdit) -> MemoryBlock:
        """Replace a block's content (creating it if new).

        Pass ``expected_version`` (0 for "must not exist yet") to fail with
        :class:`Conflict` instead of overwriting someone else's change.
        """
        content = check_text("content", args.content, allow_empty=True, max_chars=self._content_cap)
        return await self._write_block(args, lambda _old: content)

    @takes_options(BlockEdit)
    async def append_block(self, args: BlockEdit) -> MemoryBlock:
        """Append to a block atomically: concurrent appends all land, in some order."""
        content = check_text("content", args.content, max_chars=self._content_cap)
        return await self._write_block(args, lambda old: old + content)

    async def working(self, *, user_id: str | None = None) -> list[MemoryBlock]:
        """The user's pinned blocks, ordered by ``pinned_order``."""
        user = storage_user_id(user_id)
        async with self.db.statement(user) as reader:
            return await blocks_in_order(reader, user)

    async def block_history(self, name: str, *, user_id: str | None = None) -> list[BlockVersion]:
        """The stored versions of a block, oldest first."""
        user = storage_user_id(user_id)
        check_identifier("block name", name)
        async with self.db.read(user) as session:
            return await BlockRepository(session=session).history(user, name)

    async def delete_block(self, name: str, *, user_id: str | None = None) -> None:
        """Delete a block and its history; :class:`NotFound` if there is none."""
        user = storage_user_id(user_id)
        check_identifier("block name", name)
        async with self.db.write(user) as session:
            if not await BlockRepository(session=session).delete(user, name):
                raise NotFound(f"no block {name!r} for this user")
            await _record(session, user, ChangeKind.BLOCK_DELETED, name, self.db.now())
