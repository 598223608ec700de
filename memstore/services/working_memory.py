"""``store.working_memory(...)``: scoped key/value memory with TTL, task state,
scratchpad and checkpoints, shared through the database.

Every call is its own short transaction. Read-modify-write calls
(``append_scratchpad``, ``update_task_progress``) lock the row they change
(SELECT ... FOR UPDATE on Postgres; SQLite write transactions are serial), so
concurrent agents in different processes do not lose each other's updates.
"""

from __future__ import annotations

import fnmatch
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from memstore.core.scopes import (
    CHECKPOINT_FORMAT,
    check_task_state,
    progress_changes,
    task_state_from_json,
    task_state_to_json,
)
from memstore.core.tenancy import public_user_id, storage_user_id
from memstore.core.validation import (
    check_identifier,
    check_index_key_bytes,
    check_json,
    check_text,
)
from memstore.db.unit import Database
from memstore.errors import InvalidInput, NotFound
from memstore.repositories.working_memory import (
    INTERNAL_PREFIX,
    ScopeKey,
    StoredKey,
    WorkingMemoryRepository,
)
from memstore.services.limits import check_positive_seconds
from memstore.types import ScopeContext, ScopeLevel, TaskState

__all__ = ["DEFAULT_SCRATCHPAD_LIMIT", "WorkingMemory"]

DEFAULT_SCRATCHPAD_LIMIT = 100
# Reserved keys of the internal state; user keys may not start with "_".
TASK_STATE_KEY = "_task_state"
SCRATCHPAD_KEY = "_scratchpad"
METADATA_KEY = "_metadata"


def _scope_key(scope: ScopeContext) -> ScopeKey:
    return ScopeKey(
        project_id=scope.level_id(ScopeLevel.PROJECT) or "",
        agent_id=scope.level_id(ScopeLevel.AGENT_INSTANCE) or "",
        session_id=scope.level_id(ScopeLevel.SESSION) or "",
    )


def _check_user_key(key: object, action: str) -> str:
    check_identifier("key", key)
    assert isinstance(key, str)
    if key.startswith(INTERNAL_PREFIX):
        raise InvalidInput(f"cannot {action} {key!r}: keys starting with '_' are reserved")
    return key


# Internal keys and checkpoint ids (UUIDs) share the index entry with the scope.
_RESERVED_KEY_BYTES = 36


def _check_row_bytes(user: str, scope: ScopeKey, key: str | None) -> None:
    parts = [user, *scope] + ([key] if key is not None else [])
    check_index_key_bytes(
        "tenant id, project_id, agent_id, session_id" + (" and key" if key else ""),
        parts,
        reserve=_RESERVED_KEY_BYTES if key is None else 0,
    )


class WorkingMemory:
    """Working memory of one scope of one tenant. Obtain via ``store.working_memory(...)``."""

    def __init__(
        self,
        db: Database,
        scope: ScopeContext,
        *,
        user_id: str | None = None,
        default_ttl_seconds: float | None = None,
        scratchpad_limit: int = DEFAULT_SCRATCHPAD_LIMIT,
    ) -> None:
        self._db = db
        self._scope = scope
        self._key = _scope_key(scope)
        self._user = storage_user_id(user_id)
        _check_row_bytes(self._user, self._key, None)
        self._default_ttl = (
            None
            if default_ttl_seconds is None
            else check_positive_seconds("default_ttl_seconds", default_ttl_seconds)
        )
        self._scratchpad_limit = scratchpad_limit

    @property
    def scope(self) -> ScopeContext:
        """The scope this working memory belongs to."""
        return self._scope

    @property
    def user_id(self) -> str:
        """The tenant (``memstore.ANONYMOUS`` for the anonymous one)."""
        return public_user_id(self._user)

    def parent(self) -> WorkingMemory | None:
        """The working memory of the enclosing scope (None at the project level)."""
        if self._scope.parent is None:
            return None
        return WorkingMemory(
            self._db,
            self._scope.parent,
            user_id=self.user_id,
            default_ttl_seconds=self._default_ttl,
            scratchpad_limit=self._scratchpad_limit,
        )

    async def _ensure_metadata(self, repo: WorkingMemoryRepository, now: datetime) -> None:
        await repo.put_if_absent(
            self._user,
            self._key,
            METADATA_KEY,
            {
                "scope_type": self._scope.scope_type.value,
                "scope_id": self._scope.scope_id,
                "scope_path": self._scope.to_key_prefix(),
                "created_at": now.isoformat(),
            },
            now=now,
        )

    async def set(self, key: str, value: Any, ttl_seconds: float | None = None) -> None:
        """Store a JSON value; it expires after ``ttl_seconds`` (else the default TTL)."""
        _check_user_key(key, "set")
        _check_row_bytes(self._user, self._key, key)
        check_json(f"value of {key!r}", value)
        ttl = (
            self._default_ttl
            if ttl_seconds is None
            else check_positive_seconds("ttl_seconds", ttl_seconds)
        )
        now = self._db.now()
        expires_at = None if ttl is None else now + timedelta(seconds=ttl)
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            await self._ensure_metadata(repo, now)
            await repo.put(self._user, self._key, key, value, expires_at=expires_at, now=now)

    async def get(self, key: str, default: Any = None) -> Any:
        """The live value of ``key``, else ``default`` (a stored JSON null is returned as None)."""
        check_identifier("key", key)
        async with self._db.read(self._user) as session:
            found, value = await WorkingMemoryRepository(session=session).get(
                self._user, self._key, key, self._db.now()
            )
        return value if found else default

    async def delete(self, key: str) -> bool:
        """Delete a user key; True if it existed (and had not expired)."""
        _check_user_key(key, "delete")
        async with self._db.write(self._user) as session:
            return await WorkingMemoryRepository(session=session).delete(
                self._user, self._key, key, self._db.now()
            )

    async def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value that has not expired."""
        check_identifier("key", key)
        async with self._db.read(self._user) as session:
            found, _ = await WorkingMemoryRepository(session=session).get(
                self._user, self._key, key, self._db.now()
            )
        return found

    async def _live(self, *, internal: bool | None) -> list[StoredKey]:
        async with self._db.read(self._user) as session:
            return await WorkingMemoryRepository(session=session).live(
                self._user, self._key, self._db.now(), internal=internal
            )

    async def list_keys(self, pattern: str = "*") -> list[str]:
        """Live user keys matching the glob ``pattern``, sorted (internal keys excluded)."""
        check_text("pattern", pattern, max_chars=1_000)
        return [
            k.key for k in await self._live(internal=False) if fnmatch.fnmatchcase(k.key, pattern)
        ]

    async def get_all(self) -> dict[str, Any]:
        """Every live user key and its value (internal keys excluded)."""
        return {k.key: k.value for k in await self._live(internal=False)}

    async def clear(self) -> int:
        """Delete every user key, keeping task state, scratchpad and metadata.

        Returns the number of live keys deleted.
        """
        async with self._db.write(self._user) as session:
            return await WorkingMemoryRepository(session=session).delete_all(
                self._user, self._key, self._db.now(), internal=False
            )

    async def set_task_state(self, state: TaskState) -> TaskState:
        """Store the task state (``updated_at`` becomes now); returns what was stored."""
        check_task_state(state)
        now = self._db.now()
        stored = replace(state, updated_at=now)
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            await self._ensure_metadata(repo, now)
            await self._put_task_state(repo, stored, now)
        return stored

    async def get_task_state(self) -> TaskState | None:
        """The task state set by ``set_task_state`` (None if there is none)."""
        async with self._db.read(self._user) as session:
            found, data = await WorkingMemoryRepository(session=session).get(
                self._user, self._key, TASK_STATE_KEY, self._db.now()
            )
        return task_state_from_json(data) if found else None

    async def update_task_progress(
        self,
        current_step: int | None = None,
        progress_percent: float | None = None,
        status: str | None = None,
    ) -> TaskState | None:
        """Change progress fields (progress clamped to 0..100); None if no task state is set."""
        changes = progress_changes(current_step, progress_percent, status)
        now = self._db.now()
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            found, data = await repo.get(self._user, self._key, TASK_STATE_KEY, now, lock=True)
            if not found:
                return None
            state = replace(task_state_from_json(data), updated_at=now, **changes)
            await self._put_task_state(repo, state, now)
        return state

    async def _put_task_state(
        self, repo: WorkingMemoryRepository, state: TaskState, now: datetime
    ) -> None:
        await repo.put(
            self._user,
            self._key,
            TASK_STATE_KEY,
            task_state_to_json(state),
            expires_at=None,
            now=now,
        )

    async def append_scratchpad(self, content: str) -> None:
        """Append a reasoning note; past the limit the oldest notes are dropped."""
        check_text("content", content, allow_empty=True)
        now = self._db.now()
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            await self._ensure_metadata(repo, now)
            # Create-then-lock: the row must exist for FOR UPDATE to serialise appenders.
            await repo.put_if_absent(self._user, self._key, SCRATCHPAD_KEY, [], now=now)
            _, entries = await repo.get(self._user, self._key, SCRATCHPAD_KEY, now, lock=True)
            entries = [*list(entries or []), {"content": content, "timestamp": now.isoformat()}]
            entries = entries[-self._scratchpad_limit :]
            await repo.put(self._user, self._key, SCRATCHPAD_KEY, entries, expires_at=None, now=now)

    async def _scratchpad(self) -> list[dict[str, Any]]:
        async with self._db.read(self._user) as session:
            _, entries = await WorkingMemoryRepository(session=session).get(
                self._user, self._key, SCRATCHPAD_KEY, self._db.now()
            )
        return list(entries or [])

    async def get_scratchpad(self) -> list[str]:
        """Scratchpad notes, oldest first."""
        return [e["content"] for e in await self._scratchpad()]

    async def get_scratchpad_with_timestamps(self) -> list[dict[str, Any]]:
        """Notes as ``{"content": str, "timestamp": datetime}``, oldest first."""
        return [
            {"content": e["content"], "timestamp": datetime.fromisoformat(e["timestamp"])}
            for e in await self._scratchpad()
        ]

    async def clear_scratchpad(self) -> int:
        """Empty the scratchpad; returns how many notes it held."""
        now = self._db.now()
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            found, entries = await repo.get(self._user, self._key, SCRATCHPAD_KEY, now, lock=True)
            if not found:
                return 0
            await repo.put(self._user, self._key, SCRATCHPAD_KEY, [], expires_at=None, now=now)
        return len(entries or [])

    async def create_checkpoint(self, description: str = "") -> str:
        """Snapshot every live key of the scope (internal state included); returns a UUID."""
        check_text("description", description, allow_empty=True, max_chars=10_000)
        checkpoint_id = str(uuid.uuid4())
        now = self._db.now()
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            await self._ensure_metadata(repo, now)
            keys = await repo.live(self._user, self._key, now)
            data = {
                "format": CHECKPOINT_FORMAT,
                "keys": [
                    {
                        "key": k.key,
                        "value": k.value,
                        "expires_at": k.expires_at.isoformat() if k.expires_at else None,
                    }
                    for k in keys
                ],
            }
            await repo.add_checkpoint(self._user, self._key, checkpoint_id, description, data, now)
        return checkpoint_id

    async def restore_checkpoint(self, checkpoint_id: str) -> None:
        """Replace every key of the scope with the checkpoint's; NotFound if unknown.

        Keys keep their absolute expiry: one that has expired since the
        snapshot is not brought back. The checkpoint itself is kept.
        """
        check_identifier("checkpoint_id", checkpoint_id)
        now = self._db.now()
        async with self._db.write(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            data = await repo.checkpoint_data(self._user, self._key, checkpoint_id)
            if data is None:
                raise NotFound(f"no checkpoint {checkpoint_id!r} in this scope")
            keys = []
            for item in data["keys"]:
                expires_at = (
                    datetime.fromisoformat(item["expires_at"]) if item["expires_at"] else None
                )
                if expires_at is None or expires_at > now:
                    keys.append(StoredKey(item["key"], item["value"], expires_at))
            await repo.delete_all(self._user, self._key, now)
            await repo.insert_many(self._user, self._key, keys, now)

    async def list_checkpoints(self) -> list[dict[str, Any]]:
        """``{"id", "description", "created_at"}`` of each checkpoint, oldest first."""
        async with self._db.read(self._user) as session:
            return await WorkingMemoryRepository(session=session).checkpoints(self._user, self._key)

    async def delete_checkpoint(self, checkpoint_id: str) -> bool:
        """Delete a checkpoint; False if this scope has no such checkpoint."""
        check_identifier("checkpoint_id", checkpoint_id)
        async with self._db.write(self._user) as session:
            return await WorkingMemoryRepository(session=session).delete_checkpoint(
                self._user, self._key, checkpoint_id
            )

    async def get_stats(self) -> dict[str, Any]:
        """Counts of this scope's keys, checkpoints and scratchpad entries, for monitoring."""
        now = self._db.now()
        async with self._db.read(self._user) as session:
            repo = WorkingMemoryRepository(session=session)
            keys = await repo.live(self._user, self._key, now)
            checkpoints = await repo.count_checkpoints(self._user, self._key)
        by_key = {k.key: k.value for k in keys}
        return {
            "scope_type": self._scope.scope_type.value,
            "scope_id": self._scope.scope_id,
            "scope_path": self._scope.to_key_prefix(),
            "user_id": self.user_id,
            "backend": self._db.dialect,
            "total_keys": len(keys),
            "user_keys": sum(not k.startswith(INTERNAL_PREFIX) for k in by_key),
            "checkpoint_count": checkpoints,
            "scratchpad_entries": len(by_key.get(SCRATCHPAD_KEY) or []),
            "has_task_state": TASK_STATE_KEY in by_key,
        }

    async def is_healthy(self) -> bool:
        """True if the database answers."""
        try:
            async with self._db.read(self._user) as session:
                await WorkingMemoryRepository(session=session).count_checkpoints(
                    self._user, self._key
                )
        except Exception:
            return False
        return True
