"""Run an evaluation: each configuration stores the dataset's turns and answers its
questions through ``recall`` and ``context``; every question's scores are kept.

Each conversation is one tenant (``memstore-eval-<n>``), each turn one episode (the
turn's id in ``metadata["turn"]``, its speaker before the text). By default each
configuration runs on its own SQLite file in a private temporary directory, removed
afterwards; with ``url`` (an existing database, asked for explicitly) the tenants are
written there, forgotten before and after.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstore.embeddings.base import DEFAULT_DIM, Embedder
from memstore.errors import ConfigurationError
from memstore.evaluation.configs import EvalConfig
from memstore.evaluation.dataset import Dataset, Question, Turn
from memstore.evaluation.metrics import evidence_share, recall_at
from memstore.evaluation.progress import Progress
from memstore.rerankers.base import DEFAULT_RERANK_CANDIDATES
from memstore.schema.database import reembed_database
from memstore.schema.migrate import upgrade
from memstore.store import MemoryStore
from memstore.types import Episode

__all__ = [
    "DEFAULT_BUDGETS",
    "KS",
    "QuestionScores",
    "episodes_of",
    "run_configs",
    "tenant_name",
]

KS = tuple(range(1, 11))
DEFAULT_BUDGETS = (500, 1000, 2000)
TENANT_PREFIX = "memstore-eval-"
# Episode ids break ranking ties; random ones would let figures wander between runs.
ID_NAMESPACE = uuid.UUID("b7e3f0c2-5d1a-4e8b-9c61-2f0a7d3e5b49")
BATCH = 500
# Turns without a time are dated from here in file order: reproducible, and ordered.
UNDATED = datetime(2000, 1, 1, tzinfo=UTC)

ProgressFactory = Callable[[int, str], Progress]


@dataclass(frozen=True)
class QuestionScores:
    """One question's recall@k (k = 1..10) and evidence share in context per budget."""

    conversation: str
    category: str
    recall: tuple[float, ...]
    context: tuple[float, ...]


def tenant_name(index: int) -> str:
    return f"{TENANT_PREFIX}{index}"


def episodes_of(dataset: Dataset) -> dict[str, list[Episode]]:
    """The episodes of each conversation, by conversation."""
    tenants = {c: tenant_name(i) for i, c in enumerate(dataset.conversations)}
    sessions: dict[tuple[str, str], str] = {}
    out: dict[str, list[Episode]] = {c: [] for c in dataset.conversations}
    for turn in dataset.turns:
        tenant = tenants[turn.conversation]
        # Session names of the file may be any string; the store's are identifiers.
        session = sessions.setdefault(
            (turn.conversation, turn.session),
            f"s{sum(1 for c, _ in sessions if c == turn.conversation)}",
        )
        position = len(out[turn.conversation])
        out[turn.conversation].append(
            Episode(
                user_id=tenant,
                session_id=session,
                input=_text(turn),
                metadata={"turn": turn.id},
                occurred_at=turn.time or UNDATED + timedelta(seconds=position),
                id=str(uuid.uuid5(ID_NAMESPACE, f"{tenant}/{position}")),
            )
        )
    return out


def _text(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text


async def _prepare(url: str, embedder: Embedder) -> None:
    """A fresh temporary database at the embedder's width."""
    await upgrade(url)
    if int(embedder.dim) != DEFAULT_DIM:
        await reembed_database(url, embedder)


async def _ask(
    store: MemoryStore,
    tenant: str,
    q: Question,
    budgets: Sequence[int],
    turn_of: dict[str, str],
) -> QuestionScores:
    # Unrecorded: an access would lift what earlier questions found in later ones.
    with store.reads_unrecorded():
        found = await store.recall(q.question, user_id=tenant, limit=max(KS))
        ranked = [str(e.metadata.get("turn")) for e in found]
        shares = []
        for budget in budgets:
            ctx = await store.context(user_id=tenant, query=q.question, max_tokens=budget)
            carried = {turn_of.get(i.id.removeprefix("episode:"), "") for i in ctx.episodes}
            shares.append(evidence_share(q.evidence, carried))
    return QuestionScores(
        q.conversation, q.category, tuple(recall_at(q.evidence, ranked, KS)), tuple(shares)
    )


async def _run_one(
    dataset: Dataset,
    config: EvalConfig,
    url: str,
    budgets: Sequence[int],
    progress: ProgressFactory | None,
    temporary: bool,
) -> tuple[list[QuestionScores], str]:
    embedder = config.build_embedder()
    if temporary:
        await _prepare(url, embedder)
    episodes = episodes_of(dataset)
    tenants = {c: tenant_name(i) for i, c in enumerate(dataset.conversations)}
    turn_of = {str(e.id): str(e.metadata["turn"]) for rows in episodes.values() for e in rows}
    bar = progress(len(dataset.turns) + len(dataset.questions), config.name) if progress else None
    async with MemoryStore.open(
        url,
        embedder=embedder,
        reranker=config.reranker_spec(),
        rerank_candidates=config.candidates or DEFAULT_RERANK_CANDIDATES,
    ) as store:
        backend = store.backend
        try:
            for conversation, rows in episodes.items():
                await store.forget(user_id=tenants[conversation])
                for start in range(0, len(rows), BATCH):
                    await store.remember_many(rows[start : start + BATCH])
                    if bar:
                        bar.update(len(rows[start : start + BATCH]))
            scores = []
            for q in dataset.questions:
                scores.append(await _ask(store, tenants[q.conversation], q, budgets, turn_of))
                if bar:
                    bar.update()
        finally:
            if not temporary:
                for tenant in tenants.values():
                    await store.forget(user_id=tenant)
    return scores, backend


async def run_configs(
    dataset: Dataset,
    configs: Sequence[EvalConfig],
    *,
    url: str | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    progress: ProgressFactory | None = None,
) -> tuple[dict[str, list[QuestionScores]], str]:
    """Every question's scores under each configuration, and the backend's name.

    Without ``url`` each configuration gets a new SQLite file in a private temporary
    directory, removed afterwards (on failure too). With ``url``, an existing database:
    all configurations must share one embedder (a database holds one embedder's vectors).
    """
    if not configs:
        raise ConfigurationError("no configuration to evaluate", setting="config")
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"configuration names repeat: {names}", setting="config")
    out: dict[str, list[QuestionScores]] = {}
    backend = "sqlite"
    if url is not None:
        models = {
            (c.embedder, c.model, c.base_url, c.dim, c.query_form, c.document_form) for c in configs
        }
        if len(models) > 1:
            raise ConfigurationError(
                "with --url every configuration must use the database's one embedder; "
                "compare embedders on the temporary databases (no --url)",
                setting="config",
            )
        for config in configs:
            out[config.name], backend = await _run_one(
                dataset, config, url, budgets, progress, False
            )
        return out, backend
    directory = Path(tempfile.mkdtemp(prefix="memstore-eval-"))
    try:
        for i, config in enumerate(configs):
            target = f"sqlite:///{directory / f'config-{i}.db'}"
            out[config.name], backend = await _run_one(
                dataset, config, target, budgets, progress, True
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return out, backend
