"""Lossless export / import: same backend, SQLite <-> Postgres, and the JSON Lines CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import table_counts

from memstore import ANONYMOUS, Conflict, Episode, Fact, InvalidInput, MemoryStore
from memstore.core.tenancy import storage_user_id
from memstore.db.unit import Database
from memstore.embeddings.base import embed_checked
from memstore.repositories.langgraph import LangGraphRepository
from memstore.repositories.tenants import tenant_tables
from memstore.schema.migrate import upgrade
from tests.store_parts import own_engine

MARCH = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=timezone(timedelta(hours=2)))
AUGUST = datetime(2026, 8, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[1]


async def populate(store: MemoryStore, url: str, user: str | None) -> None:
    """Something in every core table, with the awkward values: both time axes,
    history, unicode, exact floats, nested JSON, offsets (``url``: the store's database)."""
    await store.remember_many(
        [
            Episode(
                user_id=user,
                session_id="s1",
                input="I moved to Paris 🇫🇷",
                output="Noted.",
                occurred_at=MARCH,
                tool_calls=[{"name": "geo", "args": {"q": "Paris"}}],
                metadata={
                    "floats": [0.1, 1e308, 5e-324, 1e16, -2.5],
                    "big": 2**70,
                    "nested": {"a": [None, True, False, {"b": "ü\n\t\"'"}]},
                },
            ),
            Episode(
                user_id=user,
                session_id="s2",
                input="",
                output="line1\r\nline2\u2028x",
                occurred_at=JUNE,
            ),
        ]
    )
    paris = await store.add_fact(
        Fact(
            user_id=user,
            subject="me",
            predicate="lives_in",
            object="Paris",
            valid_from=MARCH,
            sources=("e1",),
            confidence=0.3,
        )
    )
    await store.add_fact(
        Fact(user_id=user, subject="me", predicate="lives_in", object="London", valid_from=JUNE)
    )
    liked = await store.add_fact(
        Fact(
            user_id=user,
            subject="me",
            predicate="likes",
            object="tea",
            valid_from=MARCH,
            valid_to=AUGUST,
            confidence=1 / 3,
        )
    )
    await store.retract_fact(liked, user_id=user)
    assert paris
    await store.update_block("persona", "Be brief.", user_id=user)
    await store.append_block("persona", " Use metric units. ✓", user_id=user)
    await store.update_block("goals", "", user_id=user)
    # Thread buffer, working memory, consolidation marks and access counters.
    await store.threads.append(
        "t1",
        {"q": "hi ☕", "n": [1, 2.5]},
        from_id="user",
        to_id="agent",
        user_id=user,
        own_name="agent",
    )
    await store.threads.append(
        "t1",
        "plain text",
        from_id="agent",
        to_id="user",
        user_id=user,
        is_self_call=True,
        todo_nudge="later",
    )
    wm = store.working_memory(session_id="s1", project_id="p", agent_id="a", user_id=user)
    await wm.set("plan", {"steps": ["search", "answer"], "ratio": 0.1}, ttl_seconds=3600)
    await wm.append_scratchpad("tried X")
    await wm.create_checkpoint("before step 2")
    await store.consolidate(user_id=user)
    await store.recall("paris", user_id=user)
    await store.flush_access()
    # LangGraph store items (the repository, so this needs no langgraph install):
    # a vector blob, its indexed fields and a TTL, the columns other tables do not have.
    stored = storage_user_id(user)
    vectors = await embed_checked(store.embedder, ["likes tea ☕"])
    async with own_engine(url) as engine, Database(engine).write(stored) as session:
        await LangGraphRepository(session=session).put(
            stored,
            "memories.prefs",
            "k1",
            {"text": "likes tea ☕", "n": 0.1, "huge": 10**400},
            vectors=vectors.astype("<f4").tobytes(),
            index_fields=["text"],
            now=MARCH,
            ttl_minutes=60.0,
            expires_at=MARCH + timedelta(days=36500),
        )


def comparable(dump: dict[str, Any]) -> dict[str, Any]:
    """A dump without what differs by design: when and where it was made, and the
    change log's epoch (an import draws a new one, see docs/threads.md)."""
    kept = {k: v for k, v in dump.items() if k not in ("exported_at", "backend")}
    return {**kept, "tables": same_tables(dump["tables"])}


def same_tables(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [
            {k: v for k, v in row.items() if (name, k) != ("change_heads", "epoch")} for row in rows
        ]
        for name, rows in tables.items()
    }


async def api_view(store: MemoryStore, user: str | None) -> dict[str, Any]:
    """What the API shows, for a second, independent comparison."""
    return {
        "episodes": [
            await store.get_episode(e.id, user_id=user)
            for e in await store.recall("", user_id=user, limit=100)
        ],
        "facts": await store.fact_history(user_id=user),
        "blocks": await store.working(user_id=user),
        "history": {
            b.name: await store.block_history(b.name, user_id=user)
            for b in await store.working(user_id=user)
        },
        "messages": await store.session_messages("s2", user_id=user),
        "thread": await store.threads.get_thread("t1", user_id=user),
        "working_memory": await store.working_memory(
            session_id="s1", project_id="p", agent_id="a", user_id=user
        ).get_all(),
    }


async def test_round_trip_on_one_backend(db_url: str, store: MemoryStore) -> None:
    await populate(store, db_url, "alice")
    await populate(store, db_url, "bob")
    dump = await store.export(user_id="alice")
    view = await api_view(store, "alice")
    bob_before = await table_counts(db_url, "bob")
    assert all(dump["tables"][t.name] for t in tenant_tables()), "populate every table"
    json.dumps(dump, allow_nan=False)  # really JSON

    await store.forget(user_id="alice")
    counts = await store.import_(json.loads(json.dumps(dump)))
    assert counts == {name: len(rows) for name, rows in dump["tables"].items() if rows}
    assert comparable(await store.export(user_id="alice")) == comparable(dump)
    assert await api_view(store, "alice") == view
    assert await table_counts(db_url, "bob") == bob_before

    # Under another tenant id, leaving the original alone.
    await store.import_(dump, user_id="carol")
    carol = await store.export(user_id="carol")
    assert same_tables(carol["tables"]) == same_tables(dump["tables"])
    assert carol["user_id"] == "carol"
    await store.import_(dump, user_id=ANONYMOUS)
    anonymous = await store.export(user_id=ANONYMOUS)
    assert same_tables(anonymous["tables"]) == same_tables(dump["tables"])


async def test_import_refuses_a_tenant_with_data(db_url: str, store: MemoryStore) -> None:
    await populate(store, db_url, "alice")
    dump = await store.export(user_id="alice")
    before = await table_counts(db_url)
    with pytest.raises(Conflict):
        await store.import_(dump)
    await store.forget(user_id="dave")
    await store.update_block("x", "y", user_id="dave")
    with pytest.raises(Conflict):
        await store.import_(dump, user_id="dave")
    after = await table_counts(db_url)
    after["blocks"] -= 1
    after["block_versions"] -= 1
    # dave's update_block is in the change log too (his first change: a new head).
    after["changes"] -= 1
    after["change_heads"] -= 1
    assert after == before


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d["tables"].update(nope=[{"x": 1}]),
        lambda d: d["tables"]["blocks"][0].update(user_id="mallory"),
        lambda d: d["tables"]["blocks"][0].update(colour="red"),
        lambda d: d["tables"]["facts"][0].pop("valid_from"),
        lambda d: d["tables"]["facts"][0].update(valid_from="last tuesday"),
        lambda d: d["tables"]["episodes"][0].update(input="\x00"),
        lambda d: d.update(format="something-else/9"),
        lambda d: d.update(user_id="__system"),
    ],
)
async def test_malformed_dump_imports_nothing(db_url: str, store: MemoryStore, spoil: Any) -> None:
    await populate(store, db_url, "alice")
    dump = json.loads(json.dumps(await store.export(user_id="alice")))
    await store.forget(user_id="alice")
    spoil(dump)
    with pytest.raises(InvalidInput):
        await store.import_(dump)
    assert sum((await table_counts(db_url)).values()) == 0


async def _fresh(kind: str, pg_cluster: Any, tmp_path: Path) -> str:
    if kind == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / f'{kind}-{os.urandom(3).hex()}.db'}"
    else:
        url = await asyncio.to_thread(pg_cluster.create_database, "xfer")
    await upgrade(url)
    return url


@pytest.fixture
async def two_backends(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[dict[str, MemoryStore]]:
    pg_cluster = request.getfixturevalue("pg_cluster")
    urls = {kind: await _fresh(kind, pg_cluster, tmp_path) for kind in ("sqlite", "postgres")}
    async with MemoryStore.open(urls["sqlite"]) as lite, MemoryStore.open(urls["postgres"]) as pg:
        yield {"sqlite": lite, "postgres": pg, "urls": urls}  # type: ignore[dict-item]


@pytest.mark.postgres
@pytest.mark.sqlite
@pytest.mark.parametrize("source, target", [("sqlite", "postgres"), ("postgres", "sqlite")])
async def test_cross_backend_is_lossless(
    two_backends: dict[str, MemoryStore], source: str, target: str
) -> None:
    src, dst = two_backends[source], two_backends[target]
    url = two_backends["urls"][source]  # type: ignore[index]
    await populate(src, url, "alice")
    await populate(src, url, ANONYMOUS)
    for user in ("alice", ANONYMOUS):
        dump = await src.export(user_id=user)
        await dst.import_(json.loads(json.dumps(dump)))
        copied = await dst.export(user_id=user)
        assert copied["backend"] == {"sqlite": "sqlite", "postgres": "postgresql"}[target]
        assert comparable(copied) == comparable(dump)
        # Field by field through the API, including types (floats stay floats).
        assert await api_view(dst, user) == await api_view(src, user)
        (ep,) = [e for e in (await api_view(dst, user))["episodes"] if e.session_id == "s1"]
        # (jsonb does not keep key order, so compare sorted.)
        assert json.dumps(ep.metadata, sort_keys=True) == json.dumps(
            (await src.get_episode(ep.id, user_id=user)).metadata, sort_keys=True
        )
    # And back again: the round trip is the identity.
    await src.forget(user_id="alice")
    await src.import_(await dst.export(user_id="alice"))
    assert comparable(await src.export(user_id="alice")) == comparable(
        await dst.export(user_id="alice")
    )


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.postgres
@pytest.mark.sqlite
async def test_jsonl_cli_round_trip_and_truncation(
    two_backends: dict[str, Any], tmp_path: Path
) -> None:
    lite, pg, urls = two_backends["sqlite"], two_backends["postgres"], two_backends["urls"]
    await populate(lite, urls["sqlite"], "alice")
    dump_file = tmp_path / "alice.jsonl"
    done = await asyncio.to_thread(
        _cli, "export", "--url", urls["sqlite"], "--user", "alice", "-o", str(dump_file)
    )
    assert done.returncode == 0, done.stderr
    lines = dump_file.read_text(encoding="ascii").splitlines()
    header, *body, end = (json.loads(line) for line in lines)
    assert header["format"] == "memstore-export/1" and header["user_id"] == "alice"
    assert all(set(r) == {"table", "row"} for r in body) and "end" in end
    assert len(body) == sum(end["end"]["rows"].values())

    # A truncated file (lost last lines) imports nothing.
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-2]) + "\n", encoding="ascii")
    done = await asyncio.to_thread(_cli, "import", "--url", urls["postgres"], "-i", str(cut))
    assert done.returncode == 1 and "truncated" in done.stderr
    assert sum((await table_counts(urls["postgres"])).values()) == 0

    done = await asyncio.to_thread(_cli, "import", "--url", urls["postgres"], "-i", str(dump_file))
    assert done.returncode == 0, done.stderr
    assert comparable(await pg.export(user_id="alice")) == comparable(
        await lite.export(user_id="alice")
    )
    # From stdin, as another tenant.
    done = await asyncio.to_thread(
        _cli,
        "import",
        "--url",
        urls["postgres"],
        "--user",
        "zoe",
        stdin=dump_file.read_text(encoding="ascii"),
    )
    assert done.returncode == 0, done.stderr
    zoe, alice = await pg.export(user_id="zoe"), await lite.export(user_id="alice")
    assert same_tables(zoe["tables"]) == same_tables(alice["tables"])


async def test_export_stream_is_a_stream(store: MemoryStore, db_url: str) -> None:
    await populate(store, db_url, "alice")
    stream = store.export_stream(user_id="alice")
    first = await anext(stream)
    assert first[0] in {t.name for t in tenant_tables()}
    await stream.aclose()  # abandoning it mid-way releases the transaction
    assert (await store.profile(user_id="alice")).episode_count == 2
