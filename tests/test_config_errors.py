"""Configuration mistakes at the door: ConfigurationError with the cause, never a raw driver
error, never Unavailable; the CLI prints one line and exits non-zero."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from memstore import ConfigurationError, MemoryStore, Unavailable
from memstore.schema.migrate import upgrade
from tests.cli_support import assert_configuration_error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
# A directory that cannot exist: its parent is a regular file.
NO_DIR = Path(__file__).resolve() / "no-such-dir" / "x.db"


@pytest.fixture
def private_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-config-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _bad_static_urls() -> list[tuple[str, str]]:
    return [
        ("memstore.db", "not a database URL"),
        ("mysql://root:hunter2@localhost/db", "unsupported database backend 'mysql'"),
        ("mysql+aiomysql://root@localhost/db", "unsupported database backend 'mysql'"),
        ("postgresql+psycopg2://u@localhost/db", "cannot use"),
        (f"sqlite:///{NO_DIR}", "directory"),
    ]


def _missing_pg(pg_cluster: Any) -> list[tuple[str, str]]:
    admin = make_url(pg_cluster.admin_url)
    return [
        (
            admin.set(database="no_such_database_xyz").render_as_string(hide_password=False),
            "does not exist",
        ),
        (
            admin.set(username="no_such_role_xyz").render_as_string(hide_password=False),
            "no_such_role_xyz",
        ),
    ]


async def _open(url: str, **options: Any) -> None:
    async with MemoryStore.open(url, **options):
        pass


@pytest.mark.sqlite
@pytest.mark.parametrize(("url", "cause"), _bad_static_urls())
async def test_bad_url_is_configuration_error(url: str, cause: str) -> None:
    for options in ({}, {"auto_migrate": True}):
        with pytest.raises(ConfigurationError, match=cause) as caught:
            await _open(url, **options)
        assert not isinstance(caught.value, Unavailable)
        assert "hunter2" not in str(caught.value)
    with pytest.raises(ConfigurationError, match=cause):
        await upgrade(url)


@pytest.mark.postgres
async def test_missing_database_or_role_is_configuration_error(pg_cluster: Any) -> None:
    for url, cause in _missing_pg(pg_cluster):
        for options in ({}, {"auto_migrate": True}):
            with pytest.raises(ConfigurationError, match=cause) as caught:
                await _open(url, **options)
            assert not isinstance(caught.value, Unavailable)


@pytest.mark.sqlite
@pytest.mark.parametrize(("url", "cause"), _bad_static_urls())
def test_cli_prints_bad_url_without_traceback(url: str, cause: str, private_dir: Path) -> None:
    for command in (
        ["migrate"],
        ["export", "--user", "a", "-o", str(private_dir / "x.jsonl")],
        ["consolidate"],
        ["gc"],
    ):
        assert_configuration_error_line(run_cli(private_dir, *command, "--url", url), cause)


@pytest.mark.postgres
def test_cli_prints_missing_database_or_role_without_traceback(
    pg_cluster: Any, private_dir: Path
) -> None:
    for url, cause in _missing_pg(pg_cluster):
        for command in (["migrate"], ["consolidate"]):
            assert_configuration_error_line(run_cli(private_dir, *command, "--url", url), cause)
