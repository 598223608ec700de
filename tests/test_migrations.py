"""Migrations on empty SQLite and Postgres databases: upgrade, check, downgrade, idempotence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore import MemoryStore, SchemaOutOfDate
from memstore.db.engine import create_engine
from memstore.schema.migrate import current_revision, downgrade, head_revision, upgrade

ROOT = Path(__file__).resolve().parents[1]


def alembic(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the alembic CLI from the repository root, as an operator would on deploy."""
    env = {**os.environ, "MEMSTORE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "alembic", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def revision_of(url: str) -> str | None:
    engine = create_engine(url)
    try:
        return await current_revision(engine)
    finally:
        await engine.dispose()


def test_alembic_cli_upgrade_check_downgrade_cycle(empty_db_url: str) -> None:
    first = alembic(empty_db_url, "upgrade", "head")
    assert first.returncode == 0, first.stderr
    check = alembic(empty_db_url, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "No new upgrade operations detected" in check.stdout + check.stderr

    again = alembic(empty_db_url, "upgrade", "head")
    assert again.returncode == 0, again.stderr
    assert "Running upgrade" not in again.stderr  # second upgrade is a no-op

    down = alembic(empty_db_url, "downgrade", "base")
    assert down.returncode == 0, down.stderr
    up = alembic(empty_db_url, "upgrade", "head")
    assert up.returncode == 0, up.stderr
    check = alembic(empty_db_url, "check")
    assert check.returncode == 0, check.stdout + check.stderr


async def test_open_refuses_out_of_date_schema(empty_db_url: str) -> None:
    # auto_migrate=False: SQLite would otherwise migrate itself (test_auto_migrate_sqlite.py).
    with pytest.raises(SchemaOutOfDate, match="memstore migrate"):
        async with MemoryStore.open(empty_db_url, auto_migrate=False):
            pass
    await upgrade(empty_db_url, "0001")
    assert await revision_of(empty_db_url) == "0001"
    if head_revision() != "0001":
        with pytest.raises(SchemaOutOfDate, match="memstore migrate"):
            async with MemoryStore.open(empty_db_url, auto_migrate=False):
                pass
    await upgrade(empty_db_url)
    async with MemoryStore.open(empty_db_url) as store:
        assert await store.working(user_id="x") == []


async def test_auto_migrate_and_downgrade_from_code(empty_db_url: str) -> None:
    async with MemoryStore.open(empty_db_url, auto_migrate=True) as store:
        await store.update_block("persona", "hi", user_id="u")
    assert await revision_of(empty_db_url) == head_revision()
    await downgrade(empty_db_url, "base")
    assert await revision_of(empty_db_url) is None


def test_memstore_migrate_cli(empty_db_url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memstore", "migrate", "--url", empty_db_url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert result.returncode == 0, result.stderr
    assert f"schema at revision {head_revision()}" in result.stdout


def test_cli_error_exits_non_zero_with_cause(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'missing-dir' / 'x.db'}"
    result = subprocess.run(
        [sys.executable, "-m", "memstore", "migrate", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "unable to open database file" in result.stderr
