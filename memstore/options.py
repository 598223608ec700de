"""The options of :meth:`MemoryStore.open <memstore.store.MemoryStore.open>`: the store's
configuration (:class:`StoreConfig`) and where and with which embedder to open it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from memstore.db.unit import Clock
from memstore.embeddings.base import Embedder
from memstore.embeddings.spec import ModelSpec
from memstore.recall import RecallTuning
from memstore.rerankers.base import DEFAULT_RERANK_CANDIDATES, Reranker
from memstore.services.limits import DEFAULT_BLOCK_CHAR_LIMIT, DEFAULT_CHANGE_RETENTION_SECONDS
from memstore.services.threads import DEFAULT_MAX_SLOTS_PER_THREAD, DEFAULT_MAX_THREADS
from memstore.services.working_memory import DEFAULT_SCRATCHPAD_LIMIT
from memstore.types import utcnow

__all__ = ["OpenOptions", "StoreConfig"]


@dataclass(frozen=True, kw_only=True)
class StoreConfig:
    """A store's options: keyword arguments of :meth:`MemoryStore.open`.

    ``rls=True`` (Postgres) sets ``memstore.user_id`` in every transaction for
    the row-level security policies of ``memstore rls enable``.
    ``allow_embedder_change=True`` opens a database whose vectors another
    embedder made (see :meth:`MemoryStore.open`). ``change_retention_seconds``:
    how long :meth:`MemoryStore.gc` keeps the change log of ``changes()``. ``reranker`` (a
    :class:`~memstore.rerankers.Reranker`, or a name as for ``embedder``:
    ``"cross-encoder"`` / ``"http"`` or a ``ModelSpec``; unset in ``open``,
    ``$MEMSTORE_RERANKER`` names it; default none) re-orders the top
    ``rerank_candidates`` rows (a ``ModelSpec``'s ``candidates`` when it names them)
    of every recall that does not say otherwise
    (``recall(..., rerank=False)``), the agent's context and tools included.
    ``trace_tenant=True`` gives each operation's span the tenant, hashed
    (``memstore.tenant.hash``); off by default, a tenant id can be personal data.
    """

    block_char_limit: int = DEFAULT_BLOCK_CHAR_LIMIT
    clock: Clock = utcnow
    max_slots_per_thread: int = DEFAULT_MAX_SLOTS_PER_THREAD
    max_threads: int = DEFAULT_MAX_THREADS
    thread_idle_ttl_seconds: float | None = None
    change_retention_seconds: float = DEFAULT_CHANGE_RETENTION_SECONDS
    scratchpad_limit: int = DEFAULT_SCRATCHPAD_LIMIT
    rls: bool = False
    recall_tuning: RecallTuning | None = None
    exact_scan_threshold: int | None = None
    allow_embedder_change: bool = False
    reranker: Reranker | ModelSpec | str | None = None
    rerank_candidates: int = DEFAULT_RERANK_CANDIDATES
    trace_tenant: bool = False


@dataclass(frozen=True, kw_only=True)
class OpenOptions(StoreConfig):
    """The arguments of :meth:`MemoryStore.open`: where, with which embedder, and the options."""

    url: str | None = field(default=None, kw_only=False)
    # An object, or a name / ModelSpec built by memstore.embeddings.spec (as the CLI's
    # --embedder and $MEMSTORE_EMBEDDER are).
    embedder: Embedder | ModelSpec | str | None = None
    auto_migrate: bool | None = None
    engine_options: Mapping[str, Any] | None = None

    def config(self) -> StoreConfig:
        return StoreConfig(**{f.name: getattr(self, f.name) for f in fields(StoreConfig)})
