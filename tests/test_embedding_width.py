"""The width of stored vectors: one bound (1 to MAX_DIM) on both backends, refused before
anything changes; a recorded width no store can use is a typed error naming the fix.

An ``OpenAIEmbedder`` given ``dimensions`` never calls its endpoint until it embeds, and
on an empty store ``reembed`` embeds nothing: the width alone is under test.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.engine import make_url

from memstore import ConfigurationError, Episode, MemoryStore
from memstore.db.engine import create_engine
from memstore.embeddings import HashingEmbedder, OpenAIEmbedder
from memstore.embeddings.base import MAX_DIM
from memstore.models import ConfigRow
from memstore.models.config import EMBEDDING_DIM_KEY
from memstore.schema.database import reembed_database
from memstore.schema.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
# No server listens here; nothing in these tests sends it a request.
NOWHERE = "http://127.0.0.1:9/v1"


async def _config(url: str) -> dict[str, str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(select(ConfigRow.key, ConfigRow.value))).all()
            column = None
            if conn.dialect.name == "postgresql":
                column = await conn.scalar(
                    text(
                        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                        "WHERE attrelid = 'episodes'::regclass AND attname = 'embedding'"
                    )
                )
    finally:
        await engine.dispose()
    found = {str(k): str(v) for k, v in rows}
    if column is not None:
        found["column"] = str(column)
    return found


async def _set_recorded_width(url: str, value: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                update(ConfigRow).where(ConfigRow.key == EMBEDDING_DIM_KEY).values(value=value)
            )
    finally:
        await engine.dispose()


def _cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """``memstore ARGS``'s stderr lines, after checking it failed in one line (exit 1)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    done = subprocess.run(
        [sys.executable, "-m", "memstore", *args],
        cwd=cwd,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines


@pytest.mark.parametrize("width", [MAX_DIM + 1, 16_001, 10**9])
async def test_reembed_refuses_a_width_no_store_can_take_before_any_change(
    empty_db_url: str, width: int
) -> None:
    pytest.importorskip("openai", reason="OpenAIEmbedder needs memstore[openai]")
    await upgrade(empty_db_url)
    before = await _config(empty_db_url)
    wide = OpenAIEmbedder("m", base_url=NOWHERE, dimensions=width)
    with pytest.raises(ConfigurationError, match=f"1 to {MAX_DIM}.*got {width}") as refused:
        await reembed_database(empty_db_url, wide)
    assert refused.value.setting == "embedder"
    assert await _config(empty_db_url) == before
    # The database is as it was: the default store opens, writes and finds.
    async with MemoryStore.open(empty_db_url) as store:
        await store.remember(Episode(session_id="s", user_id="u", input="I live in Berlin"))
        assert [e.input for e in await store.recall("Berlin", user_id="u")] == ["I live in Berlin"]


@pytest.mark.sqlite
def test_reembed_command_refuses_the_width_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    asyncio.run(upgrade(url))
    for options in (
        ["--embedder", "openai", "--embedder-model", "m", "--embedder-base-url", NOWHERE],
        ["--embedder", "hashing"],
    ):
        (line,) = _cli(tmp_path, "reembed", "--url", url, *options, "--embedder-dim", "1000000000")
        assert line.startswith("memstore reembed: ConfigurationError: ")
        assert "--embedder-dim" in line and "1000000000" in line
    assert asyncio.run(_config(url))[EMBEDDING_DIM_KEY] == "384"


async def test_a_recorded_width_no_store_can_use_is_a_configuration_error(
    empty_db_url: str, tmp_path: Path
) -> None:
    await upgrade(empty_db_url)
    await _set_recorded_width(empty_db_url, "1000000000")
    for options in ({}, {"embedder": "hashing"}, {"allow_embedder_change": True}):
        with pytest.raises(ConfigurationError, match=r"'1000000000'.*memstore reembed") as refused:
            async with MemoryStore.open(empty_db_url, auto_migrate=False, **options):
                pass
        assert refused.value.setting == "embedding_dim"
    (line,) = _cli(tmp_path, "gc", "--url", empty_db_url)
    assert line.startswith("memstore gc: ConfigurationError: ") and "memstore reembed" in line
    # The fix the message names works: reembed records a width again.
    result = await reembed_database(empty_db_url, HashingEmbedder())
    assert (result.previous_dimension, result.dimension) == (10**9, 384)
    async with MemoryStore.open(empty_db_url, auto_migrate=False) as store:
        assert store.embedder.dim == 384


@pytest.mark.sqlite
@pytest.mark.parametrize("width", ["0", "-1", "1000000000"])
async def test_hashing_width_from_the_environment_outside_the_bound(
    width: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "new.db"
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMSTORE_EMBEDDER_DIM", width)
    with pytest.raises(ConfigurationError, match="MEMSTORE_EMBEDDER_DIM") as refused:
        async with MemoryStore.open(f"sqlite:///{path}"):
            pass
    assert refused.value.setting == "embedder"
    assert not path.exists()  # refused before any database was made
    existing = tmp_path / "store.db"
    await upgrade(f"sqlite:///{existing}")
    env = {"MEMSTORE_EMBEDDER": "hashing", "MEMSTORE_EMBEDDER_DIM": width}
    commands = [["consolidate"], ["mcp", "--user-id", "alice"]]
    if find_spec("mcp") is None:  # without memstore[mcp] the command says so first
        commands.pop()
    for command in commands:
        (line,) = _cli(tmp_path, *command, "--url", f"sqlite:///{existing}", env=env)
        assert line.startswith(f"memstore {command[0]}: ConfigurationError: "), line
        assert f"got {width}" in line


@pytest.mark.parametrize("width", ["0", "2001", "wide"])
async def test_migrate_refuses_a_width_no_store_can_use_before_touching_the_database(
    empty_db_url: str, backend: str, tmp_path: Path, width: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTORE_EMBEDDING_DIM", width)
    with pytest.raises(ConfigurationError, match="MEMSTORE_EMBEDDING_DIM") as refused:
        await upgrade(empty_db_url)
    assert refused.value.setting == "MEMSTORE_EMBEDDING_DIM"
    if backend == "sqlite":
        database = tmp_path / Path(make_url(empty_db_url).database or "").name
        assert not database.exists()
    monkeypatch.delenv("MEMSTORE_EMBEDDING_DIM")
    await upgrade(empty_db_url)  # the same database migrates at the default width
    assert (await _config(empty_db_url))[EMBEDDING_DIM_KEY] == "384"
    (line,) = _cli(
        tmp_path, "migrate", "--url", empty_db_url, env={"MEMSTORE_EMBEDDING_DIM": width}
    )
    assert line.startswith("memstore migrate: ConfigurationError: ") and f"{width}" in line
