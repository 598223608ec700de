"""Citus-ready schema: the distribution rules on the models and on live databases,
and the statements `memstore citus` prints (Citus itself cannot be installed here)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import (
    Column,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    text,
)

import memstore.models  # noqa: F401  (registers every table)
from memstore.backends.postgresql.citus import (
    CitusNotInstalled,
    SchemaNotDistributable,
    apply_citus,
    citus_plan,
)
from memstore.cli import main
from memstore.db.base import Base
from memstore.db.distribution import catalog_problems, metadata_problems
from memstore.db.engine import create_engine
from memstore.errors import InvalidInput

REPO = Path(__file__).resolve().parent.parent


def test_models_follow_the_distribution_rules() -> None:
    assert metadata_problems(Base.metadata) == []


async def test_live_database_follows_the_distribution_rules(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            problems = await conn.run_sync(catalog_problems, Base.metadata)
    finally:
        await engine.dispose()
    assert problems == []


def _bad_metadata() -> MetaData:
    md = MetaData()
    Table(
        "parents",
        md,
        Column("user_id", String, primary_key=True),
        Column("id", String, primary_key=True),
    )
    Table(
        "no_tenant_pk",
        md,
        Column("id", String, primary_key=True),
        Column("user_id", String, nullable=False),
    )
    Table(
        "loose_unique",
        md,
        Column("user_id", String, primary_key=True),
        Column("id", String, primary_key=True),
        Column("email", String),
        UniqueConstraint("email"),
    )
    Table(
        "loose_index",
        md,
        Column("user_id", String, primary_key=True),
        Column("id", String, primary_key=True),
        Column("slug", String),
        Index("uq_loose_index_slug", "slug", unique=True),
    )
    Table(
        "bad_child",
        md,
        Column("user_id", String, primary_key=True),
        Column("id", String, primary_key=True),
        Column("parent_id", String),
        ForeignKeyConstraint(["id", "parent_id"], ["parents.user_id", "parents.id"]),
    )
    Table(
        "nullable_tenant",
        md,
        Column("id", Integer, primary_key=True),
        Column("user_id", String, nullable=True),
    )
    Table("undeclared", md, Column("key", String, primary_key=True))
    Table(
        "global_to_tenant",
        md,
        Column("key", String, primary_key=True),
        Column("owner", String),
        Column("pid", String),
        ForeignKeyConstraint(["owner", "pid"], ["parents.user_id", "parents.id"]),
        info={"global": True},
    )
    return md


EXPECTED_BAD = [
    r"no_tenant_pk: primary key lacks user_id",
    r"loose_unique: unique constraint .* lacks user_id",
    r"loose_index: unique index uq_loose_index_slug lacks user_id",
    r"bad_child: foreign key .* to parents does not map user_id to parents.user_id",
    r"nullable_tenant: user_id is nullable",
    r"nullable_tenant: primary key lacks user_id",
    r"undeclared: has no user_id column and is not declared global .*",
    r"global_to_tenant: global table references tenant table parents .*",
]


def test_rules_catch_every_kind_of_breach_in_metadata() -> None:
    problems = metadata_problems(_bad_metadata())
    for pattern in EXPECTED_BAD:
        assert any(re.fullmatch(pattern, p) for p in problems), (pattern, problems)
    assert not any(p.startswith("parents") for p in problems)


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("sqlite", marks=pytest.mark.sqlite),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ],
)
async def test_rules_catch_breaches_in_a_live_catalog(empty_db_url: str) -> None:
    """A table a migration might add without following the rules fails on the catalog."""
    bad = _bad_metadata()
    engine = create_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(bad.create_all)
        async with engine.connect() as conn:
            against_models = await conn.run_sync(catalog_problems, Base.metadata)
            against_bad = await conn.run_sync(catalog_problems, bad)
    finally:
        await engine.dispose()
    # Unknown to the models: every one of them is reported.
    assert {p.split(":")[0] for p in against_models} == {t.name for t in bad.sorted_tables}
    for pattern in [
        r"no_tenant_pk: primary key \['id'\] lacks user_id",
        r"loose_unique: unique (constraint|index) .* lacks user_id",
        r"loose_index: unique index uq_loose_index_slug lacks user_id",
        r"bad_child: foreign key .* to parents does not map user_id",
        r"nullable_tenant: user_id is nullable",
        r"undeclared: no user_id and not declared global",
    ]:
        assert any(re.fullmatch(pattern, p) for p in against_bad), (pattern, against_bad)


# ---- memstore citus ------------------------------------------------------------------


def test_citus_plan_distributes_every_table_in_dependency_order() -> None:
    plan = citus_plan()
    statements = plan.statements
    reference = [s for s in statements if "create_reference_table" in s]
    distributed = [s for s in statements if "create_distributed_table" in s]
    assert reference == ["SELECT create_reference_table('memstore_config')"]
    assert statements.index(reference[0]) < statements.index(distributed[0])
    assert distributed[0] == "SELECT create_distributed_table('episodes', 'user_id')"
    named = [re.search(r"\('(\w+)'", s).group(1) for s in distributed]  # type: ignore[union-attr]
    tenant = sorted(t.name for t in Base.metadata.sorted_tables if "user_id" in t.c)
    assert sorted(named) == tenant  # each tenant table exactly once
    for s in distributed[1:]:
        assert s.endswith(", 'user_id', colocate_with => 'episodes')"), s
    # A table is distributed after every tenant table it references.
    for table in Base.metadata.sorted_tables:
        for fk in table.foreign_key_constraints:
            if fk.referred_table.name in named:
                assert named.index(fk.referred_table.name) < named.index(table.name)
    # The append-only trigger on slots needs Citus' permission, before slots is distributed.
    assert statements[0] == "SET LOCAL citus.enable_unsafe_triggers TO on"


def test_citus_plan_notes_say_what_changes() -> None:
    script = citus_plan().render()
    flat = " ".join(line.removeprefix("--").strip() for line in script.splitlines())
    for phrase in [
        "HNSW",
        "GIN",
        "per shard",
        "Advisory locks are per node",
        "Triggers",
        "Row-level security",
        "consolidation-scheduling",
        "gc-all-tenants",
    ]:
        assert phrase in flat, phrase
    assert script.splitlines()[2] == "BEGIN;" and "COMMIT;" in script


def test_citus_plan_refuses_a_schema_that_breaks_the_rules() -> None:
    with pytest.raises(SchemaNotDistributable, match="primary key lacks user_id") as caught:
        citus_plan(_bad_metadata())
    assert caught.value.problems


def test_cli_prints_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["citus"]) == 0
    out = capsys.readouterr().out
    assert out == citus_plan().render()


def test_cli_url_only_with_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["citus", "--url", "postgresql://nowhere/x"]) == 1
    err = capsys.readouterr().err
    assert "InvalidInput: --url is only used with --apply" in err


async def _schema_snapshot(url: str) -> list[tuple[str, ...]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text(
                    "SELECT c.relname, c.relkind::text, coalesce(e.extname, '') FROM pg_class c "
                    "LEFT JOIN pg_extension e ON true "
                    "WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1, 3"
                )
            )
            return [tuple(str(v) for v in r) for r in rows]
    finally:
        await engine.dispose()


@pytest.mark.postgres
def test_apply_on_plain_postgres_fails_clearly_and_changes_nothing(
    pg_cluster: object,
) -> None:
    url = pg_cluster.create_database("citus")  # type: ignore[attr-defined]
    from memstore.schema.migrate import upgrade

    asyncio.run(upgrade(url))
    before = asyncio.run(_schema_snapshot(url))
    with pytest.raises(CitusNotInstalled, match="citus extension is not installed"):
        asyncio.run(apply_citus(url))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "citus", "--apply", "--url", url],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("memstore citus: CitusNotInstalled: the citus extension")
    assert "Traceback" not in done.stderr
    assert asyncio.run(_schema_snapshot(url)) == before


@pytest.mark.sqlite
def test_apply_on_sqlite_is_refused() -> None:
    with tempfile.TemporaryDirectory(prefix="memstore-citus-") as private:
        with pytest.raises(InvalidInput, match="PostgreSQL only"):
            asyncio.run(apply_citus(f"sqlite+aiosqlite:///{Path(private) / 'x.db'}"))


def test_scaling_doc_shows_the_current_output() -> None:
    doc = (REPO / "docs" / "SCALING.md").read_text()
    assert "```sql\n" + citus_plan().render() + "```" in doc
