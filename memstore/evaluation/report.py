"""Figures of a run: means with bootstrap intervals, overall and per category, as JSON
data and Markdown tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from memstore.evaluation.metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate, bootstrap
from memstore.evaluation.runner import KS, QuestionScores

__all__ = ["TABLE_KS", "markdown", "summarise"]

TABLE_KS = (1, 5, 10)


def _columns(rows: Sequence[QuestionScores], budgets: Sequence[int]) -> dict[str, list[float]]:
    columns = {f"recall@{k}": [r.recall[i] for r in rows] for i, k in enumerate(KS)}
    for i, budget in enumerate(budgets):
        columns[f"context@{budget}"] = [r.context[i] for r in rows]
    return columns


def _group(
    rows: Sequence[QuestionScores], budgets: Sequence[int], seed: int, resamples: int
) -> dict[str, Any]:
    estimates = bootstrap(_columns(rows, budgets), seed=seed, resamples=resamples)
    return {"n": len(rows), **{name: _as_dict(e) for name, e in estimates.items()}}


def _as_dict(e: Estimate) -> dict[str, float | None]:
    def clean(x: float) -> float | None:
        return None if math.isnan(x) else round(x, 6)

    return {"mean": clean(e.mean), "low": clean(e.low), "high": clean(e.high)}


def summarise(
    results: Mapping[str, Sequence[QuestionScores]],
    *,
    budgets: Sequence[int],
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
) -> list[dict[str, Any]]:
    """Per configuration: ``overall`` and ``categories`` (each ``n`` and, per metric,
    ``mean``/``low``/``high``), and ``curve``: mean recall@k for k = 1..10."""
    out = []
    for name, rows in results.items():
        categories = sorted({r.category for r in rows})
        out.append(
            {
                "name": name,
                "overall": _group(rows, budgets, seed, resamples),
                "categories": {
                    c or "-": _group([r for r in rows if r.category == c], budgets, seed, resamples)
                    for c in categories
                },
                "curve": [
                    round(sum(r.recall[i] for r in rows) / len(rows), 6) if rows else None
                    for i in range(len(KS))
                ],
            }
        )
    return out


def _cell(figure: Mapping[str, float | None]) -> str:
    mean, low, high = figure["mean"], figure["low"], figure["high"]
    if mean is None or low is None or high is None:
        return "-"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def _metrics(budgets: Sequence[int]) -> list[tuple[str, str]]:
    return [(f"recall@{k}", f"R@{k}") for k in TABLE_KS] + [
        (f"context@{b}", f"ctx {b}") for b in budgets
    ]


def markdown(summary: Sequence[Mapping[str, Any]], *, budgets: Sequence[int]) -> str:
    """An overall table (a row per configuration) and a per-category one."""
    metrics = _metrics(budgets)
    head = "| configuration | n | " + " | ".join(label for _, label in metrics) + " |"
    rule = "|---|---:|" + "---:|" * len(metrics)
    lines = ["Evidence recall (mean [95 % bootstrap interval])", "", head, rule]
    for config in summary:
        group = config["overall"]
        cells = " | ".join(_cell(group[m]) for m, _ in metrics)
        lines.append(f"| {config['name']} | {group['n']} | {cells} |")
    lines += ["", "Per category", ""]
    lines.append(
        "| configuration | category | n | " + " | ".join(label for _, label in metrics) + " |"
    )
    lines.append("|---|---|---:|" + "---:|" * len(metrics))
    for config in summary:
        for category, group in config["categories"].items():
            cells = " | ".join(_cell(group[m]) for m, _ in metrics)
            lines.append(f"| {config['name']} | {category} | {group['n']} | {cells} |")
    return "\n".join(lines) + "\n"
