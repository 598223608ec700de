"""Consolidation in one process: reconciliation, claiming rules, store API, CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import table_counts
from consolidation_helpers import (
    JUNE,
    MARCH,
    T0,
    consolidation_marks,
    current_facts,
    user_episodes,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import ANONYMOUS, Episode, ExtractionError, MemoryStore
from memstore.repositories.consolidation import ConsolidationRepository
from memstore.services.consolidation import CandidateFact
from tests.conftest import is_postgres
from tests.store_parts import StoreParts, store_with_parts

ROOT = Path(__file__).resolve().parent.parent


def ep(text: str, when: datetime, user: str | None = "alice", session: str = "s1") -> Episode:
    return Episode(user_id=user, session_id=session, occurred_at=when, input=text, output="ok")


async def test_add_uses_occurred_at_and_episode_sources(store: MemoryStore) -> None:
    episode_id = await store.remember(ep("I live in Paris.", MARCH))
    result = await store.consolidate_all_tenants()
    assert (result.processed, result.added, result.reinforced, result.superseded) == (1, 1, 0, 0)
    assert result.duration >= 0
    (fact,) = await store.fact_history(user_id="alice", predicate="lives_in")
    assert (fact.subject, fact.object, fact.valid_from, fact.valid_to) == (
        "alice",
        "Paris",
        MARCH,
        None,
    )
    assert fact.sources == (episode_id,)
    assert fact.superseded_at is None


async def test_reinforce_merges_sources_and_raises_confidence(store: MemoryStore) -> None:
    first = await store.remember(ep("I love jazz.", MARCH))
    await store.consolidate_all_tenants()
    second = await store.remember(ep("Honestly, I love jazz!", MARCH + timedelta(days=3)))
    result = await store.consolidate_all_tenants()
    assert (result.processed, result.added, result.reinforced) == (1, 0, 1)
    history = await store.fact_history(user_id="alice", predicate="likes")
    assert len(history) == 2
    old, new = history[0], history[1]
    assert old.superseded_at is not None and new.superseded_at is None
    assert new.fact_id == old.fact_id
    assert new.sources == (first, second)
    assert new.confidence > old.confidence
    assert new.valid_from == MARCH  # still true since it was first said


async def test_supersede_closes_valid_time_and_keeps_history(store: MemoryStore) -> None:
    paris = await store.remember(ep("I just moved to Paris.", MARCH))
    await store.consolidate_all_tenants()
    believed_before = store.now()
    london = await store.remember(ep("Big news: I relocated to London.", JUNE))
    result = await store.consolidate_all_tenants()
    assert (result.processed, result.added, result.superseded) == (1, 0, 1)

    history = await store.fact_history(user_id="alice", subject="alice", predicate="lives_in")
    assert [(f.object, f.valid_from, f.valid_to, f.superseded_at is None) for f in history] == [
        ("Paris", MARCH, None, False),  # what we believed until the move was recorded
        ("Paris", MARCH, JUNE, True),  # corrected copy: valid time closed at the move
        ("London", JUNE, None, True),
    ]
    assert history[2].sources == (london,) and history[1].sources == (paris,)

    now_facts = await store.recall_facts("lives", user_id="alice")
    assert [f.object for f in now_facts] == ["London"]
    april = await store.recall_facts("lives", user_id="alice", valid_at=MARCH + timedelta(days=40))
    assert [f.object for f in april] == ["Paris"]
    then = await store.recall_facts(
        "lives", user_id="alice", valid_at=store.now(), known_at=believed_before
    )
    assert [f.object for f in then] == ["Paris"]


async def test_out_of_order_batch_reconciles_in_time_order(store: MemoryStore) -> None:
    # One batch holding both statements, remembered newest first.
    await store.remember_many([ep("I relocated to London.", JUNE), ep("I live in Paris.", MARCH)])
    await store.consolidate_all_tenants()
    current = [
        (f.object, f.valid_from, f.valid_to)
        for f in await store.fact_history(user_id="alice", predicate="lives_in")
        if f.superseded_at is None
    ]
    assert sorted(current, key=lambda c: c[1]) == [("Paris", MARCH, JUNE), ("London", JUNE, None)]


async def test_multi_valued_predicates_keep_several_current_objects(store: MemoryStore) -> None:
    await store.remember_many(
        [
            ep("I love jazz.", MARCH),
            ep("I love hiking in the Alps.", MARCH + timedelta(days=1)),
            ep("I have a cat. I own two bikes.", MARCH + timedelta(days=2)),
            ep("I work at Acme.", MARCH + timedelta(days=3)),
            ep("I work at Globex.", MARCH + timedelta(days=4)),
        ]
    )
    await store.consolidate_all_tenants()
    facts = await store.recall_facts("", user_id="alice", limit=50)
    by_predicate: dict[str, set[str]] = {}
    for f in facts:
        by_predicate.setdefault(f.predicate, set()).add(f.object)
    assert by_predicate["likes"] == {"jazz", "hiking in the Alps"}
    assert by_predicate["owns"] == {"cat", "two bikes"}
    assert by_predicate["works_at"] == {"Globex"}  # single-valued: the later one only


async def test_each_episode_is_consolidated_once(db_url: str, store: MemoryStore) -> None:
    await store.remember_many(user_episodes("carol", 12) + user_episodes("dave", 7))
    first = await store.consolidate_all_tenants()
    assert first.processed == 19
    snapshot = await current_facts(db_url)
    again = await store.consolidate_all_tenants()
    assert (again.processed, again.added, again.reinforced) == (0, 0, 0)
    assert await current_facts(db_url) == snapshot
    assert set((await consolidation_marks(db_url)).values()) == {1}
    assert len(await consolidation_marks(db_url)) == 19


async def test_limit_user_and_batches(store: MemoryStore) -> None:
    await store.remember_many(
        user_episodes("carol", 10)
        + user_episodes("dave", 10)
        + [ep("I love tea.", MARCH, user=ANONYMOUS)]
    )
    only_dave = await store.consolidate(user_id="dave", limit=4, batch_size=3)
    assert (only_dave.processed, only_dave.batches, only_dave.users) == (4, 2, {"dave"})
    rest = await store.consolidate_all_tenants(batch_size=3)
    assert rest.processed == 17
    assert rest.users == {"carol", "dave", ANONYMOUS}
    anonymous = await store.recall_facts("tea", user_id=ANONYMOUS)
    assert [(f.subject, f.object) for f in anonymous] == [("user", "tea")]
    # Consolidated facts are embedded, so dave's own facts rank (densely); the
    # anonymous bucket's tea never appears among them.
    assert "tea" not in {f.object for f in await store.recall_facts("tea", user_id="dave")}


class _Exploding:
    name = "exploding"

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        raise ExtractionError("model went away")


class _HalfBad:
    """A good candidate followed by an invalid one: the good one must not be written."""

    name = "half-bad"

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        e = episodes[0]
        return [
            CandidateFact(
                subject="alice",
                predicate="likes",
                object="tea",
                confidence=0.9,
                valid_from=e.occurred_at,
                episode_id=e.id,
            ),
            CandidateFact(
                subject="alice",
                predicate="likes",
                object="coffee",
                confidence=7.0,
                valid_from=e.occurred_at,
                episode_id=e.id,
            ),
        ]


@pytest.mark.parametrize("extractor", [_Exploding(), _HalfBad()], ids=["raises", "invalid"])
async def test_failed_extraction_writes_nothing_and_can_be_retried(
    db_url: str, store: MemoryStore, extractor: object
) -> None:
    await store.remember_many([ep("I love tea.", MARCH), ep("I live in Oslo.", JUNE)])
    with pytest.raises(ExtractionError):
        await store.consolidate_all_tenants(extractor=extractor)  # type: ignore[arg-type]
    counts = await table_counts(db_url)
    assert counts["facts"] == 0
    assert await consolidation_marks(db_url) == {}
    # Claims were released (SQLite) / rolled back (Postgres): a retry needs no waiting.
    retry = await store.consolidate_all_tenants()
    assert (retry.processed, retry.added) == (2, 2)


async def test_forget_and_export_cover_consolidation_state(db_url: str, store: MemoryStore) -> None:
    await store.remember_many(
        [ep("I love tea.", MARCH, session="a"), ep("I love jam.", MARCH, session="b")]
    )
    await store.consolidate_all_tenants()
    dump = await store.export(user_id="alice")
    assert len(dump["tables"]["episode_consolidation"]) == 2
    await store.forget(user_id="alice", session_id="a")
    assert len(await consolidation_marks(db_url)) == 1  # cascaded with its episode
    await store.forget(user_id="alice")
    assert (await table_counts(db_url, "alice"))["episode_consolidation"] == 0


async def test_expired_lease_is_taken_over_and_late_worker_writes_nothing(
    db_url: str, backend: str
) -> None:
    clock = [T0]
    async with store_with_parts(db_url, clock=lambda: clock[0]) as parts:
        store = parts.store
        await store.remember_many(user_episodes("erin", 4))
        slow = store.consolidator(lease_seconds=60, worker_id="slow")
        fast = store.consolidator(lease_seconds=60, worker_id="fast")
        claimed = await slow.claim(10, None)
        assert claimed is not None and len(claimed[1]) == 4
        # A live lease held by another worker: the tenant is skipped.
        assert (await fast.run()).processed == 0
        clock[0] = T0 + timedelta(seconds=61)
        taken = await fast.run()
        assert taken.processed == 4
        # The slow worker comes back after its lease was taken over: no longer its episodes.
        async with parts.db.write() as session:
            repo = ConsolidationRepository(session=session)
            assert await repo.still_leased("erin", [e.id for e in claimed[1]], "slow") == set()
        assert set((await consolidation_marks(db_url)).values()) == {1}


async def test_a_claim_skips_a_tenant_whose_write_is_in_progress(db_url: str, backend: str) -> None:
    """Postgres: the tenant lock of a write transaction makes a claim skip the tenant."""
    if not is_postgres(backend):
        pytest.skip("SQLite write transactions are serial (BEGIN IMMEDIATE)")
    async with store_with_parts(db_url) as parts:
        store = parts.store
        await store.remember_many(user_episodes("erin", 3) + user_episodes("fred", 2))
        async with parts.db.write() as session:
            repo = ConsolidationRepository(session=session)
            assert await repo.try_lock_tenant("erin")
            # Meanwhile another worker only gets the tenant that is not locked.
            other = await store.consolidator().run()
            assert (other.processed, other.users) == (2, {"fred"})
        # The lock ended with the transaction: erin's episodes are still pending.
        rest = await store.consolidator().run()
        assert (rest.processed, rest.users) == (3, {"erin"})


class _Probe:
    """Rule extraction that first looks, from outside, at what the store holds."""

    name = "probe"

    def __init__(self, engine: AsyncEngine, db_url: str, backend: str) -> None:
        self.engine, self.db_url, self.backend = engine, db_url, backend
        self.seen: list[dict[str, object]] = []

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        from memstore.services.consolidation import RuleExtractor

        held: dict[str, object] = {"checked_out": self.engine.pool.checkedout()}
        if is_postgres(self.backend):
            held.update(await _postgres_activity(self.db_url))
        else:
            # No write lock: another store commits a write while we extract.
            async with MemoryStore.open(self.db_url) as other:
                # A block, not an episode: nothing new for the consolidator to pick up.
                await other.update_block("persona", "writes meanwhile", user_id="someone-else")
            held["other_writer_committed"] = True
        self.seen.append(held)
        return await RuleExtractor().extract(episodes)


async def _postgres_activity(url: str) -> dict[str, object]:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from memstore.db.engine import resolve_url

    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            in_transaction = await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                )
            )
            locks = await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE a.datname = current_database() AND l.pid <> pg_backend_pid() "
                    "AND (l.locktype = 'advisory' OR l.mode LIKE 'Row%')"
                )
            )
    finally:
        await engine.dispose()
    return {"in_transaction": in_transaction, "locks": locks}


async def test_nothing_is_held_while_the_extractor_runs(
    parts: StoreParts, db_url: str, backend: str
) -> None:
    """No transaction, lock or pooled connection of the store during extraction."""
    store = parts.store
    await store.remember_many(user_episodes("erin", 3) + user_episodes("fred", 2))
    probe = _Probe(parts.engine, db_url, backend)
    result = await store.consolidate_all_tenants(extractor=probe, batch_size=10)
    assert result.processed == 5 and len(probe.seen) == 2
    for held in probe.seen:
        assert held["checked_out"] == 0
        if is_postgres(backend):
            assert held["in_transaction"] == 0 and held["locks"] == 0
        else:
            assert held["other_writer_committed"] is True
    assert set((await consolidation_marks(db_url)).values()) == {1}


def _cli(*args: str, env_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "memstore", "consolidate", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_once_on_empty_queue_exits_zero(db_url: str) -> None:
    done = _cli("--once", "--url", db_url)
    assert done.returncode == 0, done.stderr
    assert "consolidated 0 episodes" in done.stdout


async def test_cli_consolidates_with_log_lines_and_summary(store: MemoryStore, db_url: str) -> None:
    await store.remember_many(user_episodes("gina", 5))
    done = _cli("--url", db_url, "--batch-size", "2", "--user", "gina")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(" batch user=gina ") == 3  # plain lines when not a terminal
    assert done.stdout.strip().splitlines()[-1].startswith("consolidated 5 episodes in 3 batches")


def test_cli_failure_exits_non_zero_with_cause(backend: str, empty_db_url: str) -> None:
    done = _cli("--url", empty_db_url)
    assert done.returncode == 1
    # A SQLite path with no file is refused (and not created); an empty Postgres
    # database exists but has no schema.
    assert ("NotFound" if backend == "sqlite" else "SchemaOutOfDate") in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    from memstore.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["consolidate", "--batch-size", "0"])
    assert exited.value.code == 2
    assert "must be positive" in capsys.readouterr().err


def test_cli_loop_stops_on_max_seconds_and_on_sigterm(db_url: str) -> None:
    done = _cli("--loop", "--interval", "0.2", "--max-seconds", "0.5", "--url", db_url)
    assert done.returncode == 0, done.stderr
    assert "consolidated 0 episodes" in done.stdout

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    service = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memstore",
            "consolidate",
            "--loop",
            "--interval",
            "3600",
            "--url",
            db_url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert service.stderr is not None
    assert "loop every 3600s" in service.stderr.readline()  # handlers are installed by now
    service.send_signal(signal.SIGTERM)
    out, err = service.communicate(timeout=60)
    assert service.returncode == 0, err
    assert "consolidated 0 episodes" in out


async def test_migration_0004_downgrades_and_upgrades(empty_db_url: str) -> None:
    from sqlalchemy import inspect

    from memstore.db.engine import create_engine
    from memstore.schema.migrate import downgrade, upgrade

    async def tables() -> set[str]:
        engine = create_engine(empty_db_url)
        try:
            async with engine.connect() as conn:
                return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
        finally:
            await engine.dispose()

    await upgrade(empty_db_url)
    assert "episode_consolidation" in await tables()
    await downgrade(empty_db_url, "0003")
    assert "episode_consolidation" not in await tables()
    assert "episodes" in await tables()
    await upgrade(empty_db_url)
    async with MemoryStore.open(empty_db_url) as store:
        await store.remember(ep("I love tea.", MARCH))
        assert (await store.consolidate_all_tenants()).added == 1


async def test_demo_consolidates_then_time_travels(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from memstore.cli.demo_story import run_demo

    await run_demo(db_url)
    out = capsys.readouterr().out
    assert "== consolidate\n  consolidated 3 episodes" in out
    assert "alice lives_in Paris" in out and "alice works_at Acme" in out
    assert "1 superseded" in out
    assert "where did alice live in April? (valid time)\n  Paris" in out
    assert "what did we believe before the correction? (transaction time)\n  Paris" in out
    assert "London (valid since" in out
