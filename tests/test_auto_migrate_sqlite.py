"""The embedded SQLite default migrates itself on open; Postgres keeps explicit migrations."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from memstore import Episode, Fact, MemoryStore, SchemaOutOfDate
from memstore.db.engine import create_engine
from memstore.schema.migrate import current_revision, downgrade, head_revision, upgrade

ROOT = Path(__file__).resolve().parents[1]


async def revision_of(url: str) -> str | None:
    engine = create_engine(url)
    try:
        return await current_revision(engine)
    finally:
        await engine.dispose()


@pytest.fixture
def private_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-automigrate-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.sqlite
async def test_sqlite_url_is_created_and_migrated_on_open(private_dir: Path) -> None:
    url = f"sqlite+aiosqlite:///{private_dir / 'new.db'}"
    async with MemoryStore.open(url) as store:
        await store.remember(Episode(session_id="s", user_id="u", input="hello"))
    assert await revision_of(url) == head_revision()


@pytest.mark.sqlite
async def test_old_sqlite_schema_is_upgraded_on_open_keeping_rows(private_dir: Path) -> None:
    url = f"sqlite+aiosqlite:///{private_dir / 'old.db'}"
    async with MemoryStore.open(url) as store:
        await store.update_block("persona", "kept", user_id="u")
    await downgrade(url, "0004")  # as if written by an older memstore
    assert await revision_of(url) == "0004"
    async with MemoryStore.open(url) as store:
        assert [b.content for b in await store.working(user_id="u")] == ["kept"]
    assert await revision_of(url) == head_revision()


@pytest.mark.sqlite
async def test_sqlite_opt_out_and_newer_schema_are_refused(private_dir: Path) -> None:
    url = f"sqlite+aiosqlite:///{private_dir / 'x.db'}"
    with pytest.raises(SchemaOutOfDate, match="memstore migrate"):
        async with MemoryStore.open(url, auto_migrate=False):
            pass
    await upgrade(url)
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = 'ffff_future'"))
    finally:
        await engine.dispose()
    with pytest.raises(SchemaOutOfDate, match="does not know"):
        async with MemoryStore.open(url):
            pass


@pytest.mark.sqlite
def test_default_url_is_the_embedded_file_in_the_working_directory(private_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_URL"}
    env["PYTHONPATH"] = str(ROOT)
    code = (
        "import asyncio\nfrom memstore import MemoryStore\n"
        "async def main():\n    async with MemoryStore.open() as s:\n"
        "        await s.update_block('persona', 'hi', user_id='u')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=private_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (private_dir / "memstore.db").is_file()


@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_postgres_is_never_migrated_implicitly(empty_db_url: str) -> None:
    with pytest.raises(SchemaOutOfDate, match="memstore migrate"):
        async with MemoryStore.open(empty_db_url):
            pass
    assert await revision_of(empty_db_url) is None
    async with MemoryStore.open(empty_db_url, auto_migrate=True) as store:
        assert await store.working(user_id="u") == []
    assert await revision_of(empty_db_url) == head_revision()


async def test_store_writes_vectors_right_after_open_migrated_it(empty_db_url: str) -> None:
    # On Postgres the pool's connection that checked the schema predated the
    # `vector` extension, so it had no pgvector codec: every vector write failed.
    async with MemoryStore.open(empty_db_url, auto_migrate=True) as store:
        await store.remember(Episode(session_id="s", user_id="u", input="the cat sleeps"))
        await store.add_fact(Fact(user_id="u", subject="cat", predicate="is", object="asleep"))
        assert [e.input for e in await store.recall("cat", user_id="u")] == ["the cat sleeps"]
        assert [f.object for f in await store.recall_facts("cat", user_id="u")] == ["asleep"]


_OPEN_AND_WRITE = """
import asyncio, sys
from memstore import Episode, MemoryStore

async def main():
    async with MemoryStore.open(sys.argv[1]) as store:
        await store.remember(Episode(session_id="s", user_id="u", input=sys.argv[2]))

asyncio.run(main())
"""


@pytest.mark.sqlite
def test_processes_opening_a_fresh_file_together_all_succeed(private_dir: Path) -> None:
    # Migration transactions take the write lock (BEGIN IMMEDIATE): the first
    # process migrates, the others wait and then find the schema current.
    url = f"sqlite+aiosqlite:///{private_dir / 'race.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AND_WRITE, url, f"p{i}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    try:
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in results]

    async def written() -> set[str]:
        async with MemoryStore.open(url) as store:
            return {e.input for e in await store.recall("p", user_id="u", limit=10)}

    assert asyncio.run(written()) == {"p0", "p1", "p2", "p3"}


@pytest.mark.sqlite
async def test_in_memory_sqlite_is_migrated_and_kept() -> None:
    # Migrating must not drop the engine's connection: that would lose the database.
    async with MemoryStore.open("sqlite+aiosqlite:///:memory:") as store:
        await store.remember(Episode(session_id="s", user_id="u", input="hello there"))
        assert [e.input for e in await store.recall("hello", user_id="u")] == ["hello there"]
