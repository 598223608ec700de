"""One agent turn written by hand on the raw driver: aiosqlite here, asyncpg in turnraw_pg.

The same statements memstore sends for ``context()`` + ``remember()`` +
``threads.append()`` (:mod:`benchlib.turnsql`, and the recall statements memstore
generated, :class:`benchlib.turnprobe.Template`), in the same transactions and with
the same concurrency: the four reads of ``context()`` at once, each on its own
connection, then the two access-count reads at once; each write in one transaction.
The same embedder (the query is embedded by each recall, as memstore does) and the
same caches: SQLite's per-tenant vector matrix kept while the tenant's search version
is unchanged, Postgres' corpus statistics reused for 60 s.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from .turnprobe import Template
from .turnsql import SQLITE, access_sql

__all__ = [
    "CHANNEL",
    "MAX_SLOTS",
    "MESSAGE_LIMIT",
    "STATS_TTL",
    "RawSqliteTurns",
    "Turns",
    "terms_of",
]

DEPTH = 200  # candidates per signal (memstore's RecallTuning.depth)
FACT_LIMIT = 50  # what context() asks of each recall at the default budget
MESSAGE_LIMIT = 10  # this session's newest turns read (message_limit 20, two per turn)
MAX_SLOTS = 10_000
STATS_TTL = 60.0
CHANNEL = "memstore_changes"


def terms_of(query: str) -> list[str]:
    """The query's keyword terms, as memstore derives them."""
    from memstore.core.lexical import query_terms

    return query_terms(query)


def _top(ids: Sequence[str], matrix: np.ndarray, qvec: np.ndarray) -> str:
    """The ``DEPTH`` nearest rows as memstore binds them: JSON [[id, cosine], ...]."""
    if not ids:
        return "[]"
    sims = matrix @ qvec
    order = np.argsort(-sims, kind="stable")[:DEPTH].tolist()
    return json.dumps([[ids[i], s] for i, s in zip(order, sims[order].tolist(), strict=True)])


class Turns:
    """What both backends share: the embedder, counters of statements and of what was read."""

    def __init__(self, embedder: Any, templates: dict[str, Template]) -> None:
        self.embedder = embedder
        self.templates = templates
        self.statements = 0
        self.empty_reads = 0  # contexts whose recall found no episode (the guard checks 0)

    async def qvec(self, query: str) -> np.ndarray:
        return np.asarray((await self.embedder.embed([query]))[0], dtype=np.float32)

    async def episode_vector(self, said: str, answered: str) -> np.ndarray:
        # memstore embeds "input\noutput" (memstore.core.documents.episode_text)
        vec = (await self.embedder.embed([f"{said}\n{answered}"]))[0]
        return np.asarray(vec, dtype=np.float32)

    async def recall(self, kind: str, tenant: str, query: str) -> list[Any]:
        """The rows of the ``facts`` or ``episodes`` recall statement, as a turn runs it."""
        return list(await (self._facts if kind == "facts" else self._episodes)(tenant, query))

    async def replay(self, kind: str) -> list[Any]:
        """The recall statement run with the values memstore bound when it was captured."""
        t = self.templates[kind]
        return await self._read_values(t.sql, t.values)

    async def _facts(self, tenant: str, query: str) -> list[Any]:
        raise NotImplementedError

    async def _episodes(self, tenant: str, query: str) -> list[Any]:
        raise NotImplementedError

    async def _read_values(self, sql: str, values: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    async def blocks(self, tenant: str) -> list[Any]:
        """The tenant's working blocks (the first read of ``context()``)."""
        raise NotImplementedError

    def _access_ids(self, facts: list[Any], episodes: list[Any], session: str) -> tuple[Any, Any]:
        fact_ids = [r[1] for r in facts if r[1]]
        episode_ids = [r[1] for r in episodes if r[2] != session]
        if not episodes:
            self.empty_reads += 1
        return fact_ids, episode_ids


class RawSqliteTurns(Turns):
    """A pool of ``size`` aiosqlite connections set up as memstore's; one writer at a time."""

    def __init__(self, path: str, size: int, embedder: Any, templates: dict[str, Template]):
        super().__init__(embedder, templates)
        self.path, self.size = path, size
        self._idle: asyncio.Queue[Any] = asyncio.Queue()
        self._all: list[Any] = []
        self._writer = asyncio.Lock()  # memstore queues its SQLite writers the same way
        self._vectors: dict[str, tuple[int | None, list[str], np.ndarray, int, float]] = {}

    async def open(self) -> None:
        import aiosqlite

        for _ in range(self.size):
            conn = await aiosqlite.connect(self.path, isolation_level=None)
            for pragma in (
                "busy_timeout = 30000",
                "journal_mode = WAL",
                "synchronous = NORMAL",
                "foreign_keys = ON",
                "secure_delete = ON",
            ):
                await conn.execute(f"PRAGMA {pragma}")
            self._all.append(conn)
            self._idle.put_nowait(conn)

    async def close(self) -> None:
        for conn in self._all:
            await conn.close()

    @asynccontextmanager
    async def _transaction(self, begin: str = "BEGIN") -> AsyncIterator[Any]:
        conn = await self._idle.get()
        try:
            await conn.execute(begin)
            try:
                yield conn
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")
        finally:
            self._idle.put_nowait(conn)

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[Any]:
        async with self._writer, self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    async def _q(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self.statements += 1
        async with conn.execute(sql, tuple(params)) as cursor:
            return list(await cursor.fetchall())

    @staticmethod
    def _now() -> tuple[datetime, str]:
        now = datetime.now(UTC)
        return now, now.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")

    async def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        async with self._transaction() as conn:
            return await self._q(conn, sql, params)

    async def _read_values(self, sql: str, values: Sequence[Any]) -> list[Any]:
        return await self._read(sql, values)

    async def blocks(self, tenant: str) -> list[Any]:
        return await self._read(SQLITE.blocks, (tenant,))

    async def _facts(self, tenant: str, query: str) -> list[Any]:
        qvec = await self.qvec(query)
        from memstore.backends.sqlite.search import term_range

        _, now = self._now()
        async with self._transaction() as conn:
            rows = await self._q(conn, SQLITE.fact_vectors, (tenant, now, now, now, now))
            matrix = np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(len(rows), -1)
            terms = json.dumps([term_range(t) for t in terms_of(query)])
            t = self.templates["facts"]
            params = t.params(
                dense=_top([r[0] for r in rows], matrix, qvec),
                user_id=tenant,
                valid_at=now,
                known_at=now,
                terms=terms,
            )
            return await self._q(conn, t.sql, params)

    async def _episodes(self, tenant: str, query: str) -> list[Any]:
        qvec = await self.qvec(query)
        from memstore.backends.sqlite.search import term_range

        _, now = self._now()
        async with self._transaction() as conn:
            (version,) = (await self._q(conn, SQLITE.version, (tenant,)))[0]
            cached = self._vectors.get(tenant)
            if cached is None or cached[0] != version or version is None:
                rows = await self._q(conn, SQLITE.episode_vectors, (tenant,))
                ids = [r[0] for r in rows]
                matrix = np.frombuffer(b"".join(r[1] for r in rows), np.float32)
                matrix = matrix.reshape(len(rows), -1)
                (count,) = (await self._q(conn, SQLITE.count, (tenant,)))[0]
                median = (await self._q(conn, SQLITE.median, (tenant, (count - 1) // 2)))[0][0]
                cached = (version, ids, matrix, count, float(median))
                self._vectors[tenant] = cached
            _, ids, matrix, count, median = cached
            t = self.templates["episodes"]
            params = t.params(
                dense=_top(ids, matrix, qvec),
                terms=json.dumps([term_range(x) for x in terms_of(query)]),
                user_id=tenant,
                corpus_docs=float(count),
                corpus_chars=median,
                now=now,
            )
            return await self._q(conn, t.sql, params)

    async def _access(self, tenant: str, kind: str, ids: list[str]) -> list[Any]:
        if not ids:
            return []
        return await self._read(access_sql(SQLITE.access, "qmark", len(ids)), (tenant, kind, *ids))

    async def context(self, tenant: str, session: str, query: str) -> int:
        blocks, facts, episodes, _messages = await asyncio.gather(
            self.blocks(tenant),
            self._facts(tenant, query),
            self._episodes(tenant, query),
            self._read(SQLITE.messages, (tenant, session, MESSAGE_LIMIT)),
        )
        fact_ids, episode_ids = self._access_ids(facts, episodes, session)
        await asyncio.gather(
            self._access(tenant, "fact", fact_ids), self._access(tenant, "episode", episode_ids)
        )
        return len(blocks) + len(facts) + len(episodes)

    async def remember(self, tenant: str, session: str, said: str, answered: str) -> None:
        from memstore.core.documents import date_words

        vec = await self.episode_vector(said, answered)
        now, stamp = self._now()
        async with self._write() as conn:
            (turn,) = (await self._q(conn, SQLITE.turn, (tenant, session)))[0]
            await self._q(
                conn,
                SQLITE.episode,
                (
                    tenant,
                    str(uuid.uuid4()),
                    session,
                    said,
                    answered,
                    "[]",
                    "{}",
                    stamp,
                    stamp,
                    vec.tobytes(),
                    f"{said}\n{answered}\n{date_words(now)}",
                    turn - 1,
                ),
            )

    async def append(self, tenant: str, thread: str, payload: dict[str, Any]) -> None:
        _, stamp = self._now()
        async with self._write() as conn:
            (index,) = (
                await self._q(conn, SQLITE.thread, (tenant, thread, stamp, stamp, MAX_SLOTS))
            )[0]
            await self._q(
                conn,
                SQLITE.slot,
                (
                    tenant,
                    thread,
                    index - 1,
                    "user",
                    "agent",
                    "dict",
                    json.dumps(payload),
                    None,
                    0,
                    "",
                    "",
                    stamp,
                ),
            )
            seq, _epoch = (await self._q(conn, SQLITE.head, (tenant, str(uuid.uuid4()))))[0]
            await self._q(
                conn, SQLITE.change, (tenant, seq, "thread_appended", thread, index - 1, stamp)
            )
