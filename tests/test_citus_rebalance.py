"""Agents keep working while Citus moves their shard: nothing lost, doubled or raw.

A few agents take turns (``context()`` + ``remember()`` + ``threads.append()``) on tenants
of one shard group while ``citus_move_shard_placement`` moves that group to the other
worker (``block_writes``: writes to it wait for the copy). The store's ``command_timeout``
is short, so calls that wait on the move fail, as they would under a longer move with the
default: each failure must be a retryable memstore error, and the agents retry it as a
user would (tests/citus_turns.py). Afterwards every tenant holds each successful
remember() as one episode and each successful append as one slot, positions gap-free.

Only with the citus backend (``MEMSTORE_TEST_CITUS=1``; tests/conftest.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from sqlalchemy.engine import make_url

from memstore import MemoryStore
from memstore.db.engine import create_engine
from tests.citus_cluster import CitusCluster
from tests.citus_turns import Ledger, agent, check
from tests.conftest import CITUS_ENABLED, migrate_and_distribute

pytestmark = [
    pytest.mark.citus,
    pytest.mark.skipif(not CITUS_ENABLED, reason="the Citus stage is off (MEMSTORE_TEST_CITUS=1)"),
]

AGENTS = 3
TURNS_BEFORE = 2  # each agent's turns before the move starts
TURNS_AFTER = 2  # and after it has finished
# Short enough that a write waiting on the move's lock gives up (the failure path is
# exercised), long enough for an unhindered call on a loaded test machine.
COMMAND_TIMEOUT = 1.0


def _tenants_of_one_shard(cluster: CitusCluster, database: str) -> tuple[int, list[str]]:
    """A shard of ``episodes`` and ``AGENTS`` tenant names that hash to it."""
    shard = int(
        cluster.psql(database, "SELECT get_shard_id_for_distribution_column('episodes', 'agent0')")
    )
    found: list[str] = []
    for n in range(10_000):
        name = f"agent{n}"
        of = cluster.psql(
            database, f"SELECT get_shard_id_for_distribution_column('episodes', '{name}')"
        )
        if int(of) == shard:
            found.append(name)
        if len(found) == AGENTS:
            return shard, found
    raise AssertionError("no tenants of one shard found")


def _node_of(cluster: CitusCluster, database: str, shard: int) -> int:
    return int(cluster.psql(database, f"SELECT nodeport FROM citus_shards WHERE shardid = {shard}"))


@pytest.mark.parametrize("backend", [pytest.param("citus", marks=pytest.mark.citus)])
async def test_turns_during_a_shard_move_lose_and_double_nothing(
    empty_db_url: str, citus_cluster: CitusCluster
) -> None:
    await migrate_and_distribute(empty_db_url)
    database = str(make_url(empty_db_url).database)
    shard, tenants = _tenants_of_one_shard(citus_cluster, database)
    source = _node_of(citus_cluster, database, shard)
    target = next(p for p in (citus_cluster.port + 1, citus_cluster.port + 2) if p != source)
    ledger = Ledger()
    moved = asyncio.Event()
    options = {"command_timeout": COMMAND_TIMEOUT, "pool_size": AGENTS + 1, "max_overflow": 0}
    async with MemoryStore.open(empty_db_url, engine_options=options) as store:
        await asyncio.gather(
            *(agent(store, ledger, t, turns=TURNS_BEFORE, label="before") for t in tenants)
        )

        async def move() -> None:
            try:
                await asyncio.to_thread(
                    citus_cluster.psql,
                    database,
                    f"SELECT citus_move_shard_placement({shard}, '127.0.0.1', {source}, "
                    f"'127.0.0.1', {target}, shard_transfer_mode => 'block_writes')",
                )
            finally:
                moved.set()

        # The agents take turns for as long as the move runs (at least one each).
        during = [
            agent(store, ledger, t, until=moved.is_set, label="during", at_least=1) for t in tenants
        ]
        await asyncio.gather(move(), *during)
        await asyncio.gather(
            *(agent(store, ledger, t, turns=TURNS_AFTER, label="after") for t in tenants)
        )
    assert _node_of(citus_cluster, database, shard) == target

    engine = create_engine(empty_db_url)
    try:
        assert ledger.leaks == [], ledger.leaks
        assert await check(engine, ledger, tenants) == []
        assert all(len(ledger.appended[t]) >= TURNS_BEFORE + TURNS_AFTER + 1 for t in tenants)
        # The check itself would see a lost or a doubled write.
        first = tenants[0]
        lost = replace(ledger, remembered={**ledger.remembered, first: ["never-stored"]})
        doubled = replace(ledger, appended={**ledger.appended, first: ledger.appended[first][:-1]})
        assert any("lost ['never-stored']" in p for p in await check(engine, lost, [first]))
        assert any("extra" in p for p in await check(engine, doubled, [first]))
    finally:
        await engine.dispose()
