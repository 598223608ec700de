"""``memstore citus`` on a real Citus cluster: ``--apply`` is idempotent and refuses what
it cannot do, ``--status`` reports the layout the coordinator's catalog shows.

One private cluster (coordinator + two workers, ``tests/citus_cluster.py``) serves the
module; each test gets its own database. The library module is looked up by attribute
inside the tests so that a missing function fails that test, not the whole module.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

import memstore.backends.postgresql.citus as citus_lib
from memstore.schema.migrate import upgrade
from tests.citus_cluster import CitusCluster, citus_unavailable, private_citus_cluster

pytestmark = pytest.mark.citus

REPO = Path(__file__).resolve().parent.parent
_names = itertools.count()
TENANT_TABLES = 14  # every table of the models but memstore_config


@pytest.fixture(scope="module")
def citus() -> Iterator[CitusCluster]:
    reason = citus_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with private_citus_cluster(prefix="memstore-citus-cli-") as cluster:
        yield cluster


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _sql(url: str, *statements: str) -> list[list[tuple[Any, ...]]]:
    conn = await asyncpg.connect(_dsn(url))
    try:
        return [[tuple(r) for r in await conn.fetch(s)] for s in statements]
    finally:
        await conn.close()


def sql(url: str, *statements: str) -> list[list[tuple[Any, ...]]]:
    return asyncio.run(_sql(url, *statements))


def migrated(cluster: CitusCluster) -> str:
    url = cluster.create_database(f"cli_{next(_names)}")
    asyncio.run(upgrade(url))
    return url


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", "citus", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=180,
    )


# Everything an --apply could change: which tables are Citus tables and how, their shards
# and where the shards are placed.
_LAYOUT = (
    "SELECT logicalrelid::regclass::text, partmethod, repmodel, colocationid, "
    "column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition ORDER BY 1",
    "SELECT s.logicalrelid::regclass::text, s.shardid, p.groupid FROM pg_dist_shard s "
    "JOIN pg_dist_placement p USING (shardid) ORDER BY 1, 2, 3",
)


def layout(url: str) -> list[list[tuple[Any, ...]]]:
    return sql(url, *_LAYOUT)


def test_apply_twice_the_second_run_changes_nothing_and_says_so(citus: CitusCluster) -> None:
    url = migrated(citus)
    first = cli("--apply", "--url", url)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1].endswith(
        f"{TENANT_TABLES + 1} tables, {TENANT_TABLES + 2} statements ran on the coordinator"
    )
    after_first = layout(url)
    assert len(after_first[0]) == TENANT_TABLES + 1

    second = cli("--apply", "--url", url)
    assert second.returncode == 0, second.stderr
    assert second.stdout == (
        "already distributed: nothing to do (every memstore table is laid out as planned)\n"
    )
    assert second.stderr == ""
    assert layout(url) == after_first
    assert asyncio.run(citus_lib.apply_citus(url)) == []
    assert layout(url) == after_first


def test_apply_distributes_only_the_tables_still_local(citus: CitusCluster) -> None:
    url = migrated(citus)
    # An operator distributed some by hand (or a later migration added a table).
    sql(
        url,
        "SELECT create_reference_table('memstore_config')",
        "SELECT create_distributed_table('episodes', 'user_id')",
        "SELECT create_distributed_table('threads', 'user_id', colocate_with => 'episodes')",
    )
    ran = asyncio.run(citus_lib.apply_citus(url))
    named = " ".join(ran)
    for done in ("'memstore_config'", "'episodes',", "'threads'"):
        assert done not in named, ran
    # slots has the append-only trigger: still needs Citus' permission.
    assert ran[0] == "SET LOCAL citus.enable_unsafe_triggers TO on"
    assert len([s for s in ran if "create_distributed_table" in s]) == TENANT_TABLES - 2
    status = asyncio.run(citus_lib.citus_status(url))
    assert status.distributed, status.problems()


def test_apply_refuses_a_table_distributed_differently_and_changes_nothing(
    citus: CitusCluster,
) -> None:
    url = migrated(citus)
    sql(
        url,
        "SELECT create_distributed_table('episodes', 'user_id')",
        # Its own colocation group: its joins with episodes would not stay on one node.
        "SELECT create_distributed_table('session_turns', 'user_id', colocate_with => 'none')",
    )
    before = layout(url)
    with pytest.raises(citus_lib.CitusLayoutConflict, match=r"session_turns in colocation group"):
        asyncio.run(citus_lib.apply_citus(url))
    assert layout(url) == before
    done = cli("--apply", "--url", url)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("memstore citus: CitusLayoutConflict: ")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert layout(url) == before


@pytest.mark.parametrize("registered", ["coordinator only", "no node at all"])
def test_apply_refuses_a_cluster_without_workers(citus: CitusCluster, registered: str) -> None:
    url = migrated(citus)
    nodes = sql(url, "SELECT nodename, nodeport, groupid FROM pg_dist_node")[0]
    for host, port, group in nodes:
        # Without any node, Citus would silently place every shard on the coordinator.
        if group != 0 or registered == "no node at all":
            sql(url, f"SELECT citus_remove_node('{host}', {port})")
    with pytest.raises(citus_lib.CitusNoWorkers, match="no active worker node"):
        asyncio.run(citus_lib.apply_citus(url))
    done = cli("--apply", "--url", url)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("memstore citus: CitusNoWorkers: the Citus coordinator of ")
    assert "citus_add_node" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert layout(url) == [[], []]
    status = cli("--status", "--url", url)
    assert status.returncode == 0, status.stderr
    assert "(no active worker: `memstore citus --apply` refuses to distribute)" in status.stdout


def test_status_reports_tables_colocation_shards_and_nodes(citus: CitusCluster) -> None:
    url = migrated(citus)
    before = asyncio.run(citus_lib.citus_status(url))
    assert not before.distributed
    assert {t.kind for t in before.tables} == {"not distributed"}
    assert len(before.workers) == 2
    assert cli("--apply", "--url", url).returncode == 0

    status = asyncio.run(citus_lib.citus_status(url))
    assert status.distributed and status.problems() == {}
    # Compared with Citus's own summary view, an independent reading of the catalog.
    view = {
        r[0]: r[1:]
        for r in sql(
            url,
            "SELECT table_name::text, citus_table_type, distribution_column, colocation_id, "
            "shard_count FROM citus_tables",
        )[0]
    }
    assert {t.name for t in status.tables} == set(view)
    for t in status.tables:
        kind, column, colocation, shards = view[t.name]
        assert (t.kind, t.colocation_id, t.shard_count) == (kind, colocation, shards)
        assert (t.distribution_column or "<none>") == column
    tenant = [t for t in status.tables if t.name != "memstore_config"]
    assert len(tenant) == TENANT_TABLES
    assert {t.distribution_column for t in tenant} == {"user_id"}
    assert len({t.colocation_id for t in tenant}) == 1
    (shards_per_table,) = sql(url, "SHOW citus.shard_count")[0][0]
    assert {t.shard_count for t in tenant} == {int(shards_per_table)}
    placed = sql(
        url,
        "SELECT n.nodeport, count(*) FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) "
        "JOIN pg_dist_partition d ON d.logicalrelid = (SELECT logicalrelid FROM pg_dist_shard s "
        "WHERE s.shardid = p.shardid) WHERE d.partmethod = 'h' GROUP BY 1",
    )[0]
    assert {n.port: n.shards for n in status.workers} == dict(placed)
    assert sum(n.shards for n in status.nodes) == TENANT_TABLES * int(shards_per_table)

    out = cli("--status", "--url", url)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    group = tenant[0].colocation_id
    assert any(
        line.split() == ["episodes", "distributed", "user_id", str(group), shards_per_table]
        for line in lines
    ), lines
    assert any(line.split()[:2] == ["memstore_config", "reference"] for line in lines), lines
    assert sum(1 for line in lines if line.lstrip().startswith("worker ")) == 2
    assert f"  {group}: {TENANT_TABLES} table(s), {shards_per_table} shard(s) each: " in (
        out.stdout
    )
    assert lines[-1] == (
        f"distributed as planned: {TENANT_TABLES} tenant tables by user_id, co-located; "
        "1 reference table(s)"
    )


def test_status_and_apply_refuse_a_database_without_citus(citus: CitusCluster) -> None:
    # A plain database on the coordinator: no citus extension.
    admin = citus.create_database(f"cli_{next(_names)}")
    name = f"plain_{next(_names)}"
    sql(admin, f'CREATE DATABASE "{name}"')
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    asyncio.run(upgrade(url))
    for args in (["--status"], ["--apply"]):
        done = cli(*args, "--url", url)
        assert done.returncode == 1, args
        assert done.stdout == ""
        assert done.stderr.startswith("memstore citus: CitusNotInstalled: the citus extension")
        assert "Traceback" not in done.stderr
