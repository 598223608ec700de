"""forget(user_id=X) wins against work on X that started before it.

Two stores on one database stand for two worker processes: one is consolidating
or holding buffered access counts of X while the other erases X. After forget
returns, no row of X may appear later.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import Episode, Fact, MemoryStore
from memstore.db.unit import Database
from memstore.repositories.erasure import lock_for_erasure
from memstore.repositories.tenants import TenantRepository
from memstore.services.consolidation import RuleExtractor
from memstore.services.consolidation.types import CandidateFact
from memstore.types import Episode as EpisodeType
from tests.store_parts import store_with_parts
from tests.test_forget_complete import rows_of

VICTIM, BYSTANDER = "victim", "bystander"


class SlowExtractor:
    """The rule extractor, but it says when it started and then thinks for a while."""

    name = "slow-rules"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = asyncio.Event()
        self._rules = RuleExtractor()

    async def extract(self, episodes: Sequence[EpisodeType]) -> list[CandidateFact]:
        found = await self._rules.extract(episodes)
        self.started.set()
        await asyncio.sleep(self.seconds)
        return found


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {name: n for name, n in counts.items() if n}


async def test_forget_wins_over_an_in_flight_consolidation(
    db_url: str, engine: AsyncEngine
) -> None:
    async with MemoryStore.open(db_url) as worker, MemoryStore.open(db_url) as app:
        await app.remember(
            Episode(user_id=VICTIM, session_id="s", input="I live in Paris.", output="Noted.")
        )
        await app.remember(
            Episode(user_id=BYSTANDER, session_id="s", input="I live in Rome.", output="Noted.")
        )
        extractor = SlowExtractor(3.0)
        batch = asyncio.create_task(worker.consolidate(user_id=VICTIM, extractor=extractor))
        await asyncio.wait_for(extractor.started.wait(), 30)
        assert not batch.done()  # the batch is extracting right now

        await app.forget(user_id=VICTIM)
        assert _nonzero(await rows_of(engine, VICTIM)) == {}

        # Whatever the batch does now (write nothing, or have been waited for),
        # nothing of the victim may come back.
        await asyncio.gather(batch, return_exceptions=True)
        assert _nonzero(await rows_of(engine, VICTIM)) == {}
        # The bystander is untouched and still consolidates normally.
        assert (await app.consolidate(user_id=BYSTANDER)).added == 1
        facts = await app.recall_facts("lives", user_id=BYSTANDER)
        assert [f.object for f in facts] == ["Rome"]


async def test_buffered_access_counts_do_not_resurrect_a_forgotten_tenant(
    db_url: str, engine: AsyncEngine
) -> None:
    async with MemoryStore.open(db_url) as app:
        ep = await app.remember(Episode(user_id=VICTIM, session_id="s", input="hello there"))
        await app.add_fact(Fact(user_id=VICTIM, subject="me", predicate="likes", object="tea"))
        await app.update_block("persona", "Be brief.", user_id=VICTIM)
        await app.remember(Episode(user_id=BYSTANDER, session_id="s", input="hello there"))
        dump = await app.export(user_id=VICTIM)

        async with store_with_parts(db_url) as parts:
            worker = parts.store
            # The worker reads the victim's episode, fact and block (buffered counts)...
            assert [e.id for e in await worker.recall("hello", user_id=VICTIM)] == [ep]
            assert await worker.recall_facts("tea", user_id=VICTIM)
            await worker.call_tool("load_memory", {"id": "block:persona"}, user_id=VICTIM)
            await worker.recall("hello", user_id=BYSTANDER)
            assert parts.tracker.pending(VICTIM, "episode", [ep]) == {ep: 1}
            # ...then another process erases the victim; the worker closes (flushes).
            await app.forget(user_id=VICTIM)
        assert _nonzero(await rows_of(engine, VICTIM)) == {}
        # The bystander's count was not thrown away with them.
        assert [s.access_count for s in await app.access_stats(user_id=BYSTANDER)] == [1]
        # The tenant is really empty: its dump imports again.
        await app.import_(dump, user_id=VICTIM)


async def test_forget_in_the_same_store_drops_counts_recorded_meanwhile(
    db_url: str, engine: AsyncEngine
) -> None:
    async with MemoryStore.open(db_url) as store:
        ep = await store.remember(Episode(user_id=VICTIM, session_id="s", input="hello"))
        await store.recall("hello", user_id=VICTIM)
        await store.forget(user_id=VICTIM)
        # A reader that fetched the episode before the erase records it afterwards.
        store.record_access("episode", [ep], user_id=VICTIM)
        store.record_access("block", ["persona"], user_id=VICTIM)
        await store.flush_access()
        assert _nonzero(await rows_of(engine, VICTIM)) == {}


async def test_a_flush_during_a_forget_waits_and_writes_nothing(
    db_url: str, engine: AsyncEngine
) -> None:
    """Postgres: forget's transaction is open (X's rows deleted, not committed yet) when
    another store flushes X's counts; the flush must wait and then write nothing."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite writers are serial (BEGIN IMMEDIATE); no interleaving")
    async with MemoryStore.open(db_url) as app, MemoryStore.open(db_url) as worker:
        await app.remember(Episode(user_id=VICTIM, session_id="s", input="hello there"))
        assert await worker.recall("hello", user_id=VICTIM)  # buffered in the worker
        async with Database(engine).write() as session:  # forget's transaction, held open
            await lock_for_erasure(session, VICTIM)
            await TenantRepository(session=session).erase(VICTIM)
            flush = asyncio.create_task(worker.flush_access())
            await asyncio.sleep(1.0)
            assert not flush.done()  # waits for the erase to commit
        await flush
        assert _nonzero(await rows_of(engine, VICTIM)) == {}
