"""Scenario 2: per-tenant top-10 recall (hybrid and vector-only) vs hand-written SQL."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from .context import Context
from .contextrun import CONTEXT_LIMIT_MS, measure_context
from .data import Workload, episode_id, tenant_name
from .loader import load_episodes
from .recallrun import BASELINE, Truth, measure_recall
from .stats import Section

__all__ = ["run"]


LIMITS = {"memstore recall (hybrid)": 1.3, "memstore vector-only": 1.1}


def _targets(section: Section, backend: str, results: dict[str, Any]) -> None:
    for cls, paired in results.items():
        for name, limit in LIMITS.items():
            if name not in paired.samples:
                continue
            base = BASELINE[name]
            r = paired.samples[name].p50 / paired.samples[base].p50
            section.target(
                f"recall {backend} {cls}, {name}: p50 <= {limit}x {base}",
                f"{r:.2f}x",
                r <= limit,
            )
            counts = [len(x) for x in paired.results[name]]
            section.target(
                f"recall {backend} {cls}, {name}: returns k=10 rows",
                f"min {min(counts)} rows",
                min(counts) == 10,
            )


def tenant_sizes(n_rows: int) -> tuple[int, int, int]:
    """(big, mid, small) tenant sizes: 10,000 / 1,000 / 400, scaled down for small runs."""
    if n_rows >= 50_000:
        return 10_000, 1_000, 400
    return max(40, n_rows // 5), max(20, n_rows // 30), max(10, n_rows // 150)


def _recall_targets(section: Section, backend: str) -> None:
    for row in section.rows:
        c = row.cells
        if c.get("path") == "memstore vector-only" and c["store"].startswith(backend):
            value = float(c["recall@10 vs exact"])
            section.target(
                f"recall {backend} {c['tenant']}: vector-only recall@10 >= 0.95",
                f"{value:.3f}",
                value >= 0.95,
            )


def _collector(truth: Truth, watched: set[str], seed: int) -> Any:
    def collect(user: str, row: int, vec: np.ndarray, chunk: Any, i: int) -> None:
        if user in watched:
            truth.add(user, episode_id(seed, row), vec)

    return collect


def run(ctx: Context) -> Section:
    a = ctx.args
    section = Section("2. Per-tenant recall: top-10 hybrid and vector-only vs hand-written SQL")
    section.note(
        "Baselines: hybrid = one SQL statement fusing the tenant's 50 nearest vectors "
        "and 50 best full-text matches by reciprocal rank fusion (SQLite: FTS5 + "
        "numpy, fused in Python); vector = `WHERE user_id = $1 ORDER BY embedding "
        "<=> $2 LIMIT 10`, exact (`+ 0` keeps the HNSW index out) and as the planner "
        "chooses (HNSW post-filtered). Both return full rows like memstore."
    )
    section.note(
        "memstore vector-only = `recall('?')` on a store opened with dense-only "
        "RecallTuning (keyword, neighbour and session weights 0); the query has no "
        "keyword terms, so only the dense signal runs, and the lookup embedder maps it "
        "to the query's vector."
    )
    if not ctx.features["embeddings"]:
        section.note("Skipped: this memstore build has no embeddings / hybrid recall yet.")
        return section
    sizes = {"postgres": a.recall_rows_pg, "sqlite": a.recall_rows_sqlite}
    for backend in ctx.backends:
        n = sizes[backend]
        big, mid, small_rows = tenant_sizes(n)
        tenants = 2 + max(1, (n - big - mid) // small_rows)
        work = Workload(n, tenants, seed=21, leading=(big / n, mid / n))
        rng = np.random.default_rng(5)
        small = sorted({int(t) for t in rng.integers(2, tenants, size=8)})
        watched = {tenant_name(t) for t in [0, 1, *small]}
        truth = Truth()
        collect = _collector(truth, watched, work.seed)

        target = ctx.fresh(backend, "recall")
        ctx.log(f"  recall {backend}: loading {n:,} episodes over {tenants:,} tenants")
        start = time.perf_counter()
        report = asyncio.run(load_episodes(target, work, collect=collect, log=ctx.log))
        label = f"{backend} {n:,}/{tenants:,}"
        section.note(
            f"{label}: {report.describe()} (load total {time.perf_counter() - start:.0f} s)."
        )
        per_class = max(5, a.queries // 2)
        classes_q = {
            f"{big:,}-row tenant": [
                (tenant_name(0), t, v) for t, v in work.queries(0, per_class, salt=1)
            ],
            f"{mid:,}-row tenant": [
                (tenant_name(1), t, v) for t, v in work.queries(1, per_class, salt=2)
            ],
        }
        qs = []
        for j in range(per_class):
            t = small[j % len(small)]
            ((text, vec),) = work.queries(t, 1, salt=100 + j)
            qs.append((tenant_name(t), text, vec))
        classes_q[f"{small_rows:,}-row tenants"] = qs
        ctx.log(
            f"  recall {backend}: timing {sum(len(q) for q in classes_q.values())} queries per path"
        )
        results = asyncio.run(
            measure_recall(
                target,
                classes_q,
                truth,
                section,
                label=label,
                embeddings=ctx.features["embeddings"],
            )
        )
        _targets(section, backend, results)
        _recall_targets(section, backend)
        big_cls = f"{big:,}-row tenant"
        ctx.log(f"  recall {backend}: timing context() on the {big_cls}")
        samples = asyncio.run(
            measure_context(
                target, tenant_name(0), classes_q[big_cls], section, label=label, cls=big_cls
            )
        )
        p50 = samples.p50 * 1000
        section.target(
            f"context() {backend}, {big_cls}: p50 <= {CONTEXT_LIMIT_MS:.0f} ms",
            f"{p50:.1f} ms",
            p50 <= CONTEXT_LIMIT_MS,
        )
    return section
