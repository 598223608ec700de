from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ARRAY,
    Integer,
    String,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Executable
from sqlalchemy.sql.elements import TextClause

from memstore.core.tenancy import TenantId
from memstore.db.copy import copy_rows
from memstore.db.crosstenant import cross_tenant
from memstore.db.prepared import fetch
from memstore.db.unit import Reader
from memstore.db.upsert import insert_for
from memstore.dialects import dialect_for
from memstore.models import EpisodeRow, SessionTurnRow
from memstore.repositories.rows import by_key, from_row
from memstore.types import Episode

__all__ = [
    "EpisodeRepository",
    "episode_from_columns",
    "episode_from_row",
    "latest_in_session",
]


# Turn reservation as one fixed statement whatever the batch: a multi-row
# VALUES list is compiled anew for every row count, which cost more than the
# write (about 50 ms for a batch spanning 800 sessions) and made batches mixing
# tenants slow. Rows go in the given (sorted) order, so two batches never wait
# on each other crosswise.
_UPSERT_TURNS = (
    "ON CONFLICT (user_id, session_id) "
    "DO UPDATE SET next_turn = session_turns.next_turn + excluded.next_turn "
    "RETURNING user_id, session_id, next_turn"
)
_RESERVE_TURNS_PG = text(
    "INSERT INTO session_turns (user_id, session_id, next_turn) "
    "SELECT t.u, t.s, t.n FROM unnest(CAST(:users AS text[]), CAST(:sessions AS text[]), "
    "CAST(:counts AS int[])) WITH ORDINALITY AS t(u, s, n, i) ORDER BY t.i " + _UPSERT_TURNS
).bindparams(
    bindparam("users", type_=ARRAY(String())),
    bindparam("sessions", type_=ARRAY(String())),
    bindparam("counts", type_=ARRAY(Integer())),
)


@lru_cache(maxsize=64)
def _reserve_turns_one_tenant_pg(sessions: int) -> TextClause:
    """The reservation of one tenant's ``sessions`` counters as a multi-row VALUES list.

    The tenant is one bound value, so Citus routes the upsert to that tenant's shard
    (an ``INSERT … SELECT`` from ``unnest`` has no distribution value to route on and is
    pulled through the coordinator); built as text, cached per row count, so it costs
    no per-row compilation.
    """
    rows = ", ".join(f"(:u, :s{i}, :n{i})" for i in range(sessions))
    return text(
        f"INSERT INTO session_turns (user_id, session_id, next_turn) VALUES {rows} " + _UPSERT_TURNS
    )


_RESERVE_TURNS_SQLITE = text(
    "INSERT INTO session_turns (user_id, session_id, next_turn) "
    "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
    "json_extract(value, '$[2]') FROM json_each(:pairs) WHERE true ORDER BY key " + _UPSERT_TURNS
)


def _no_turns(user_id: str, session_id: str) -> int:
    raise KeyError((user_id, session_id))


def _episode(row: Any, metadata: Any) -> Episode:
    return from_row(
        Episode, row, tool_calls=list(row.tool_calls or []), metadata=dict(metadata or {})
    )


def episode_from_columns(row: Any) -> Episode:
    """An episode from a Core row of the episodes columns (``metadata`` under its SQL name)."""
    return _episode(row, row.metadata)


def episode_from_row(row: EpisodeRow) -> Episode:
    return _episode(row, row.meta)


# A session's newest turns (context's messages), built once: it runs on the driver
# (memstore.db.prepared); ``metadata`` under its SQL name, as episode_from_columns reads.
_LATEST_IN_SESSION = (
    select(
        EpisodeRow.user_id,
        EpisodeRow.id,
        EpisodeRow.session_id,
        EpisodeRow.input,
        EpisodeRow.output,
        EpisodeRow.tool_calls,
        EpisodeRow.meta.label("metadata"),
        EpisodeRow.occurred_at,
    )
    .where(
        EpisodeRow.user_id == bindparam("user_id"),
        EpisodeRow.session_id == bindparam("session_id"),
    )
    .order_by(EpisodeRow.occurred_at.desc(), EpisodeRow.id.desc())
    .limit(bindparam("limit"))
)


async def latest_in_session(
    reader: Reader, user_id: TenantId, session_id: str, limit: int
) -> list[Episode]:
    """The session's ``limit`` newest episodes, oldest first (one statement)."""
    params = {"user_id": user_id, "session_id": session_id, "limit": limit}
    rows = await fetch(reader, _LATEST_IN_SESSION, params)
    return [episode_from_columns(r) for r in reversed(rows)]


class EpisodeRepository:
    """Episodes of one tenant at a time; every statement filters by ``user_id``."""

    def __init__(self, *, session: AsyncSession) -> None:
        self._session = session

    @staticmethod
    def row(user_id: str, episode: Episode, now: datetime, **extra: Any) -> dict[str, Any]:
        """The insert values of one episode; ``extra`` adds embedding, search text, turn."""
        return {
            "user_id": user_id,
            "id": episode.id,
            "session_id": episode.session_id,
            "input": episode.input,
            "output": episode.output,
            "tool_calls": episode.tool_calls,
            "meta": episode.metadata,
            "occurred_at": episode.occurred_at,
            "created_at": now,
            **extra,
        }

    async def insert_rows(self, rows: Sequence[dict[str, Any]], *, copy: bool = False) -> None:
        """One multi-row INSERT, or a COPY (Postgres) with ``copy``; rows may belong to
        several tenants (built by :meth:`row`)."""
        if copy:
            await copy_rows(self._session, EpisodeRow, rows)
        else:
            await self._session.execute(insert(EpisodeRow), list(rows))

    async def turn_counter(self, keys: Sequence[tuple[str, str]]) -> Callable[[str, str], int]:
        """Reserves the next turn numbers of (tenant, session) pairs, one per key, in one
        statement; returns a function handing them out in order.

        The counter rows are incremented by an upsert that returns the new value:
        on Postgres it locks each row until commit (the next writer waits and reads
        the incremented value; a rollback gives the numbers back, so no gap); on
        SQLite write transactions are serial (BEGIN IMMEDIATE). Rows are reserved in
        sorted order so two batches never wait on each other crosswise.
        """
        wanted: dict[tuple[str, str], int] = {}
        for key in keys:
            wanted[key] = wanted.get(key, 0) + 1
        if not wanted:
            return _no_turns
        ordered = sorted(wanted.items())
        stmt: Executable
        params: dict[str, Any]
        arrays = dialect_for(self._session).arrays
        if arrays and len({u for (u, _), _ in ordered}) == 1:
            params = {"u": ordered[0][0][0]}
            for i, ((_, sid), n) in enumerate(ordered):
                params[f"s{i}"] = sid
                params[f"n{i}"] = n
            stmt = _reserve_turns_one_tenant_pg(len(ordered))
        elif arrays:
            params = {
                "users": [u for (u, _), _ in ordered],
                "sessions": [sid for (_, sid), _ in ordered],
                "counts": [n for _, n in ordered],
            }
            # Several tenants' counters in one statement: on Citus a multi-shard write.
            stmt = cross_tenant(_RESERVE_TURNS_PG, "multi-tenant-batch")
        else:
            params = {"pairs": json.dumps([[u, sid, n] for (u, sid), n in ordered])}
            stmt = _RESERVE_TURNS_SQLITE
        rows = (await self._session.execute(stmt, params)).all()
        following = {(u, sid): int(end) - wanted[(u, sid)] for u, sid, end in rows}

        def take(user_id: str, session_id: str) -> int:
            key = (user_id, session_id)
            following[key] += 1
            return following[key] - 1

        return take

    async def resync_turn_counters(self, user_id: TenantId) -> None:
        """Move the tenant's counters past every stored turn (after an import whose dump
        has no or stale counters), never backwards."""
        dialect = dialect_for(self._session)
        source = (
            select(EpisodeRow.user_id, EpisodeRow.session_id, func.max(EpisodeRow.turn) + 1)
            .where(EpisodeRow.user_id == user_id, EpisodeRow.turn.is_not(None))
            .group_by(EpisodeRow.user_id, EpisodeRow.session_id)
        )
        stmt: Any = insert_for(self._session)(SessionTurnRow)
        stmt = stmt.from_select(["user_id", "session_id", "next_turn"], source)
        stmt = stmt.on_conflict_do_update(
            index_elements=["user_id", "session_id"],
            set_={"next_turn": dialect.greatest(SessionTurnRow.next_turn, stmt.excluded.next_turn)},
        )
        await self._session.execute(stmt)

    async def get(self, user_id: TenantId, episode_id: str) -> Episode | None:
        return await by_key(self._session, EpisodeRow, (user_id, episode_id), episode_from_row)

    async def by_ids(self, user_id: TenantId, episode_ids: Sequence[str]) -> dict[str, Episode]:
        """The tenant's episodes among ``episode_ids``, by id (missing ones left out)."""
        if not episode_ids:
            return {}
        stmt = select(EpisodeRow).where(
            EpisodeRow.user_id == user_id, EpisodeRow.id.in_(list(episode_ids))
        )
        return {r.id: episode_from_row(r) for r in (await self._session.scalars(stmt)).all()}

    async def keyword_candidates(
        self,
        user_id: TenantId,
        tokens: Sequence[str],
        *,
        time_range: tuple[datetime, datetime] | None,
        limit: int,
    ) -> list[Episode]:
        """Newest episodes mentioning any token; all newest ones when there are no tokens."""
        stmt = select(EpisodeRow).where(EpisodeRow.user_id == user_id)
        if time_range is not None:
            stmt = stmt.where(EpisodeRow.occurred_at.between(*time_range))
        if tokens:
            haystack = func.lower(EpisodeRow.input + " " + EpisodeRow.output)
            stmt = stmt.where(or_(*(haystack.contains(t, autoescape=True) for t in tokens)))
        stmt = stmt.order_by(EpisodeRow.occurred_at.desc(), EpisodeRow.id).limit(limit)
        rows = (await self._session.scalars(stmt)).all()
        return [episode_from_row(r) for r in rows]

    async def count(self, user_id: TenantId) -> int:
        stmt = select(func.count()).select_from(EpisodeRow).where(EpisodeRow.user_id == user_id)
        return int((await self._session.scalar(stmt)) or 0)

    async def last_seen(self, user_id: TenantId) -> datetime | None:
        # ORDER BY ... LIMIT 1 rather than max(): keeps the column's UTC type on SQLite.
        stmt = (
            select(EpisodeRow.occurred_at)
            .where(EpisodeRow.user_id == user_id)
            .order_by(EpisodeRow.occurred_at.desc())
            .limit(1)
        )
        return await self._session.scalar(stmt)

    async def recent_sessions(self, user_id: TenantId, limit: int) -> list[str]:
        last = func.max(EpisodeRow.occurred_at).label("last")
        stmt = (
            select(EpisodeRow.session_id, last)
            .where(EpisodeRow.user_id == user_id)
            .group_by(EpisodeRow.session_id)
            .order_by(last.desc(), EpisodeRow.session_id)
            .limit(limit)
        )
        return [r.session_id for r in (await self._session.execute(stmt)).all()]

    async def delete(
        self, user_id: TenantId, *, session_id: str | None = None, before: datetime | None = None
    ) -> int:
        stmt = delete(EpisodeRow).where(EpisodeRow.user_id == user_id)
        if session_id is not None:
            stmt = stmt.where(EpisodeRow.session_id == session_id)
        if before is not None:
            stmt = stmt.where(EpisodeRow.occurred_at < before)
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
