"""The turn loop by hand on asyncpg (see :mod:`benchlib.turnraw` for what it reproduces)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from .appendraw import PG_APPEND
from .turnprobe import Template
from .turnraw import MAX_SLOTS, MESSAGE_LIMIT, STATS_TTL, Turns, terms_of
from .turnsql import PG, access_sql

__all__ = ["RawPostgresTurns"]


class RawPostgresTurns(Turns):
    """An asyncpg pool of memstore's size (5 kept, up to 15), connections set up as memstore's."""

    def __init__(self, dsn: str, size: int, embedder: Any, templates: dict[str, Template]):
        super().__init__(embedder, templates)
        self.dsn, self.size = dsn, size
        self.pool: Any = None
        self._stats: dict[str, tuple[float, float, float]] = {}

    async def open(self) -> None:
        import asyncpg
        from pgvector.asyncpg import register_vector

        self.pool = await asyncpg.create_pool(
            self.dsn,
            min_size=min(5, self.size),
            max_size=self.size,
            init=register_vector,
            server_settings={"plan_cache_mode": "force_custom_plan"},
        )

    async def close(self) -> None:
        await self.pool.close()

    async def _fetch(self, conn: Any, sql: str, *params: Any) -> list[Any]:
        self.statements += 1
        return list(await conn.fetch(sql, *params))

    async def _read_in_transaction(self, sql: str, *params: Any) -> list[Any]:
        # memstore's ORM reads (blocks, this session's turns, access counts) open a
        # transaction: BEGIN ISOLATION LEVEL READ COMMITTED, the statement, COMMIT
        async with self.pool.acquire() as conn, conn.transaction(isolation="read_committed"):
            return await self._fetch(conn, sql, *params)

    async def _read(self, sql: str, *params: Any) -> list[Any]:
        async with self.pool.acquire() as conn:  # autocommit: memstore runs a recall so
            return await self._fetch(conn, sql, *params)

    def _keyword(self, query: str) -> dict[str, Any]:
        from memstore.backends.postgresql.indexes import tsquery
        from memstore.core.lexical import is_prefix

        terms = terms_of(query)
        return {"terms": terms, "prefixes": [is_prefix(t) for t in terms], "tsq": tsquery(terms)}

    async def _read_values(self, sql: str, values: Sequence[Any]) -> list[Any]:
        return await self._read(sql, *values)

    async def blocks(self, tenant: str) -> list[Any]:
        return await self._read_in_transaction(PG.blocks, tenant)

    async def _facts(self, tenant: str, query: str) -> list[Any]:
        qvec = await self.qvec(query)
        now = datetime.now(UTC)
        t = self.templates["facts"]
        params = t.params(
            qvec=qvec, user_id=tenant, valid_at=now, known_at=now, **self._keyword(query)
        )
        return await self._read(t.sql, *params)

    async def _episodes(self, tenant: str, query: str) -> list[Any]:
        qvec = await self.qvec(query)
        t = self.templates["episodes"]
        stats = self._stats.get(tenant)
        async with self.pool.acquire() as conn:
            if stats is None or time.monotonic() - stats[2] >= STATS_TTL:
                # memstore refreshes the statistics in a transaction with the recall
                async with conn.transaction(isolation="read_committed"):
                    (count,) = (
                        await self._fetch(
                            conn, "SELECT count(*) FROM episodes WHERE user_id = $1", tenant
                        )
                    )[0]
                    median = (await self._fetch(conn, PG_MEDIAN, tenant, (count - 1) // 2))[0][0]
                    stats = (float(count), float(median), time.monotonic())
                    self._stats[tenant] = stats
                    return await self._episode_statement(conn, t, tenant, qvec, stats, query)
            return await self._episode_statement(conn, t, tenant, qvec, stats, query)

    async def _episode_statement(
        self,
        conn: Any,
        t: Template,
        tenant: str,
        qvec: np.ndarray,
        stats: tuple[float, float, float],
        query: str,
    ) -> list[Any]:
        params = t.params(
            qvec=qvec,
            user_id=tenant,
            corpus_docs=stats[0],
            corpus_chars=stats[1],
            now=datetime.now(UTC),
            **self._keyword(query),
        )
        return await self._fetch(conn, t.sql, *params)

    async def _access(self, tenant: str, kind: str, ids: list[str]) -> list[Any]:
        if not ids:
            return []
        sql = access_sql(PG.access, "dollar", len(ids))
        return await self._read_in_transaction(sql, tenant, kind, *ids)

    async def context(self, tenant: str, session: str, query: str) -> int:
        blocks, facts, episodes, _messages = await asyncio.gather(
            self.blocks(tenant),
            self._facts(tenant, query),
            self._episodes(tenant, query),
            self._read_in_transaction(PG.messages, tenant, session, MESSAGE_LIMIT),
        )
        fact_ids, episode_ids = self._access_ids(facts, episodes, session)
        await asyncio.gather(
            self._access(tenant, "fact", fact_ids), self._access(tenant, "episode", episode_ids)
        )
        return len(blocks) + len(facts) + len(episodes)

    async def remember(self, tenant: str, session: str, said: str, answered: str) -> None:
        from memstore.core.documents import date_words

        vec = await self.episode_vector(said, answered)
        now = datetime.now(UTC)
        async with self.pool.acquire() as conn, conn.transaction(isolation="read_committed"):
            (turn,) = (await self._fetch(conn, PG.turn, tenant, session))[0]
            await self._fetch(
                conn,
                PG.episode,
                tenant,
                str(uuid.uuid4()),
                session,
                said,
                answered,
                "[]",
                "{}",
                now,
                now,
                vec,
                f"{said}\n{answered}\n{date_words(now)}",
                turn - 1,
            )

    async def append(self, tenant: str, thread: str, payload: dict[str, Any]) -> None:
        # memstore's append is one data-modifying CTE in autocommit (thread counter, slot,
        # change head, change row and pg_notify); the hand-written one sends the same.
        async with self.pool.acquire() as conn:
            await conn.fetchrow(
                PG_APPEND,
                tenant,
                thread,
                datetime.now(UTC),
                MAX_SLOTS,
                "user",
                "agent",
                json.dumps(payload),
                str(uuid.uuid4()),
            )


PG_MEDIAN = (
    "SELECT length(coalesce(search_text, '')) FROM episodes WHERE user_id = $1 "
    "ORDER BY length(coalesce(search_text, '')) LIMIT 1 OFFSET $2"
)
