"""Timing memstore recall against the hand-written queries on one loaded store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .memapi import LookupEmbedder, open_store
from .paired import Paired, run_paired
from .raw import SqliteQueries, pg_connect
from .rawrecall import PgRecall, SqliteRecall
from .stats import Section

__all__ = [
    "BASELINE",
    "VECTOR_ONLY",
    "K",
    "Truth",
    "dense_only_tuning",
    "hnsw_path",
    "measure_recall",
    "recall_at_k",
]

K = 10
# A query with no keyword terms (so only the dense signal runs) that is not empty
# (an empty query means "newest rows"); the lookup embedder maps it to the vector.
VECTOR_ONLY = "?"


class Truth:
    """Exact top-k per tenant from the vectors the loader saw (brute force, numpy)."""

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {}
        self.vecs: dict[str, list[np.ndarray]] = {}

    def add(self, user: str, doc_id: str, vec: np.ndarray) -> None:
        self.ids.setdefault(user, []).append(doc_id)
        self.vecs.setdefault(user, []).append(vec)

    def top(self, user: str, vec: np.ndarray, k: int = K) -> list[str]:
        matrix = np.stack(self.vecs[user])
        order = np.argsort(-(matrix @ vec))[:k]
        return [self.ids[user][i] for i in order]

    def size(self, user: str) -> int:
        return len(self.ids.get(user, []))


def _ids(result: Any) -> list[str]:
    return [getattr(r, "id", r) for r in result]


def recall_at_k(found: Sequence[str], exact: Sequence[str]) -> float:
    return len(set(found[:K]) & set(exact)) / max(1, min(K, len(exact)))


def dense_only_tuning() -> Any:
    try:
        from memstore.recall import RecallTuning
    except ImportError:
        return None
    return RecallTuning(keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0)


async def measure_recall(
    target: Any,
    classes: dict[str, list[tuple[str, str, np.ndarray]]],
    truth: Truth,
    section: Section,
    *,
    label: str,
    embeddings: bool,
    hnsw_ef: int | None = None,
) -> dict[str, Paired]:
    """``classes``: name -> [(tenant, text, vector)]. Adds rows and returns raw results."""
    pg = target.backend == "postgres"
    embedder = LookupEmbedder()
    for queries in classes.values():
        for _, text, vec in queries:
            embedder.register(text, vec)
    # An asyncpg connection (untyped) when pg, else a SqliteQueries.
    conn: Any = await pg_connect(target.raw) if pg else await SqliteQueries(target.raw).__aenter__()
    raw = PgRecall(conn) if pg else SqliteRecall(conn)
    out: dict[str, Paired] = {}
    tuning = dense_only_tuning()
    try:
        async with (
            open_store(target.url, embedder) as hybrid_store,
            open_store(
                target.url, embedder, **({"recall_tuning": tuning} if tuning else {})
            ) as dense_store,
        ):

            async def vector_only(q: tuple[str, str, np.ndarray]) -> list[str]:
                embedder.known[VECTOR_ONLY] = q[2]
                return _ids(await dense_store.recall(VECTOR_ONLY, user_id=q[0], limit=K))

            paths: dict[str, Any] = {
                "memstore recall (hybrid)": lambda q: hybrid_store.recall(
                    q[1], user_id=q[0], limit=K
                ),
                "raw hybrid SQL (RRF)": lambda q: raw.hybrid(q[0], q[1], q[2], K),
            }
            if embeddings and tuning is not None:
                paths["memstore vector-only"] = vector_only
                paths["raw vector SQL (exact)"] = lambda q: raw.vector(q[0], q[2], K)
                if pg:
                    assert isinstance(raw, PgRecall)
                    paths["raw vector SQL (planner's choice)"] = lambda q: raw.vector(
                        q[0], q[2], K, exact=False
                    )
                if pg and hnsw_ef:
                    assert isinstance(raw, PgRecall)
                    paths[hnsw_path(hnsw_ef)] = lambda q: raw.vector_hnsw(q[0], q[2], K, hnsw_ef)
            plans: dict[str, int] = {}
            for cls, queries in classes.items():
                paired = await run_paired(queries, paths)
                out[cls] = paired
                plan = getattr(getattr(dense_store, "search", None), "last_plan", "")
                if plan:
                    plans[plan] = plans.get(plan, 0) + 1
                _rows(section, label, cls, queries, paired, truth)
            if plans:
                section.note(
                    f"{label}: memstore's dense plan (last query of each class): "
                    + ", ".join(plans)
                )
    finally:
        if pg:
            await conn.close()
        else:
            await conn.__aexit__()
    return out


def hnsw_path(ef: int) -> str:
    return f"raw vector SQL (HNSW, ef_search={ef})"


class _Baselines(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "raw vector SQL (exact)"


BASELINE = _Baselines(
    {
        "memstore recall (hybrid)": "raw hybrid SQL (RRF)",
        "raw hybrid SQL (RRF)": "raw hybrid SQL (RRF)",
        "memstore vector-only": "raw vector SQL (exact)",
        "raw vector SQL (exact)": "raw vector SQL (exact)",
        "raw vector SQL (planner's choice)": "raw vector SQL (exact)",
    }
)


def _rows(
    section: Section,
    label: str,
    cls: str,
    queries: list[tuple[str, str, np.ndarray]],
    paired: Paired,
    truth: Truth,
) -> None:
    tenant_rows = sorted({truth.size(q[0]) for q in queries})
    size = (
        f"{tenant_rows[0]:,}"
        if len(tenant_rows) == 1
        else f"{tenant_rows[0]:,}-{tenant_rows[-1]:,}"
    )
    for name in paired.samples:
        results = [_ids(r) for r in paired.results[name]]
        counts = [len(r) for r in results]
        cells: dict[str, Any] = {"store": label, "tenant": f"{cls} ({size} rows)", "path": name}
        cells.update(paired.cells(name, BASELINE[name]))
        cells["rows min/mean"] = f"{min(counts)}/{np.mean(counts):.1f}"
        if "vector" in name:
            r = np.mean(
                [
                    recall_at_k(res, truth.top(q[0], q[2]))
                    for res, q in zip(results, queries, strict=True)
                ]
            )
            cells["recall@10 vs exact"] = f"{r:.3f}"
        else:
            cells["recall@10 vs exact"] = ""
        section.add(**cells)
