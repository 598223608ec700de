"""Per-question scores, their means and 95 % percentile bootstrap intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Estimate",
    "bootstrap",
    "evidence_share",
    "recall_at",
]

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` questions with its 95 % bootstrap interval [``low``, ``high``]."""

    mean: float
    low: float
    high: float
    n: int


def recall_at(evidence: Sequence[str], ranked: Sequence[str], ks: Sequence[int]) -> list[float]:
    """The share of ``evidence`` among the first k of ``ranked``, for each k of ``ks``."""
    wanted = set(evidence)
    return [len(wanted & set(ranked[:k])) / len(wanted) for k in ks]


def evidence_share(evidence: Sequence[str], carried: set[str]) -> float:
    """The share of ``evidence`` among ``carried`` (what a context holds)."""
    wanted = set(evidence)
    return len(wanted & carried) / len(wanted)


def bootstrap(
    columns: Mapping[str, Sequence[float]],
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
) -> dict[str, Estimate]:
    """Each column's mean and 95 % percentile interval over ``resamples`` resamples of
    the questions (rows), drawn with replacement by ``numpy.random.default_rng(seed)``.

    Every column is resampled with the same draws (the columns are scores of the same
    questions), so the figures of one group are paired. The interval is the 2.5th and
    97.5th percentiles of the resampled means, interpolated linearly between order
    statistics (numpy's default). Columns must have the same length; an empty group
    gives NaN.
    """
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ValueError("bootstrap columns differ in length")
    n = lengths.pop() if lengths else 0
    if n == 0:
        nan = float("nan")
        return {name: Estimate(nan, nan, nan, 0) for name in columns}
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    out: dict[str, Estimate] = {}
    for name, values in columns.items():
        array = np.asarray(values, dtype=float)
        means = array[draws].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        out[name] = Estimate(float(array.mean()), float(low), float(high), n)
    return out
