"""Measure recall on your own conversations: ``memstore eval`` and the scripts' logic.

:func:`load_dataset` reads a LoCoMo, LongMemEval or plain JSONL file;
:func:`evaluate` stores it under each configuration and reports evidence recall@k and
evidence in ``context()`` at token budgets, with 95 % bootstrap intervals
(docs/eval.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstore.evaluation.configs import EvalConfig, load_configs, parse_config
from memstore.evaluation.dataset import Dataset, Question, Turn
from memstore.evaluation.errors import InvalidEvaluationData
from memstore.evaluation.formats import FORMATS, load_dataset
from memstore.evaluation.metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate, bootstrap
from memstore.evaluation.report import markdown, summarise
from memstore.evaluation.runner import (
    DEFAULT_BUDGETS,
    KS,
    ProgressFactory,
    QuestionScores,
    run_configs,
)
from memstore.evaluation.svg import recall_svg

__all__ = [
    "DEFAULT_BUDGETS",
    "FORMATS",
    "KS",
    "Dataset",
    "Estimate",
    "EvalConfig",
    "InvalidEvaluationData",
    "Question",
    "QuestionScores",
    "Turn",
    "bootstrap",
    "evaluate",
    "load_configs",
    "load_dataset",
    "markdown",
    "parse_config",
    "recall_svg",
    "summarise",
]


async def evaluate(
    dataset: Dataset,
    configs: Sequence[EvalConfig],
    *,
    url: str | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    progress: ProgressFactory | None = None,
) -> dict[str, Any]:
    """The report of ``dataset`` under ``configs`` (the JSON ``memstore eval`` writes).

    ``url``: an existing database to write the evaluation's tenants into (forgotten
    before and after); default a private temporary SQLite file per configuration.
    """
    results, backend = await run_configs(
        dataset, configs, url=url, budgets=budgets, progress=progress
    )
    return {
        "dataset": {
            "format": dataset.format,
            "conversations": len(dataset.conversations),
            "turns": len(dataset.turns),
            "questions": len(dataset.questions),
            "dropped_evidence": dataset.dropped,
        },
        "backend": backend,
        "ks": list(KS),
        "budgets": list(budgets),
        "seed": seed,
        "resamples": resamples,
        "settings": {c.name: c.describe() for c in configs},
        "configurations": summarise(results, budgets=budgets, seed=seed, resamples=resamples),
    }
