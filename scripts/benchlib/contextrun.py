"""Timing ``store.context()`` for one large tenant (an absolute target, no raw twin)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .memapi import LookupEmbedder, open_store
from .stats import Samples, Section, ms

__all__ = ["CONTEXT_LIMIT_MS", "measure_context"]

CONTEXT_LIMIT_MS = 60.0
_BLOCKS = ("persona", "goals", "style", "notes")
_FACTS = 20


async def _furnish(store: Any, tenant: str, words: list[str]) -> None:
    """Blocks and current facts, so context() assembles every part it has."""
    from memstore import Fact

    for name in _BLOCKS:
        await store.update_block(name, " ".join(words[:60]), user_id=tenant)
    for n in range(_FACTS):
        await store.add_fact(
            Fact(
                user_id=tenant,
                subject=tenant,
                predicate=f"pref_{n}",
                object=" ".join(words[n : n + 3]),
                single_valued=True,
            )
        )


async def measure_context(
    target: Any,
    tenant: str,
    queries: list[tuple[str, str, np.ndarray]],
    section: Section,
    *,
    label: str,
    cls: str,
    warmup: int = 3,
) -> Samples:
    embedder = LookupEmbedder()
    for _, text, vec in queries:
        embedder.register(text, vec)
    samples = Samples()
    async with open_store(target.url, embedder) as store:
        words = " ".join(q[1] for q in queries).split() * 20
        await _furnish(store, tenant, words)
        hits = await store.recall(queries[0][1], user_id=tenant, limit=1)
        session = hits[0].session_id if hits else None
        for i, (_, text, _vec) in enumerate([*queries[:warmup], *queries]):
            start = time.perf_counter()
            built = await store.context(user_id=tenant, session_id=session, query=text)
            if i >= warmup:
                samples.add(time.perf_counter() - start)
        parts = [f"{len(built.of_kind(k))} {k}" for k in ("block", "fact", "episode")]
    section.add(
        **{
            "store": label,
            "tenant": cls,
            "path": "memstore context() (blocks, facts, recall, thread)",
            "p50 ms": ms(samples.p50),
            "p95 ms": ms(samples.pct(95)),
            "p99 ms": ms(samples.pct(99)),
        }
    )
    section.note(
        f"{label}: context() timed {len(samples)} calls on the {cls} with "
        f"{len(_BLOCKS)} blocks and {_FACTS} current facts; the last one held: "
        + (", ".join(parts) or "nothing")
        + "."
    )
    return samples
