"""The logistic model the shipped checkers are fitted with, and the threshold search: used by
``benchmarks.training.train_fast_checker`` (the fast checker), ``answer_check`` (the fast
answer check) and ``judge_quality`` (the judge's threshold)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from benchmarks.common import LABELS
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion

L2 = 1.0  # the penalty on the standardised coefficients (not on the intercept)


def logistic(xs: Sequence[Sequence[float]], ys: Sequence[int], l2: float = L2) -> dict[str, Any]:
    """Standardise, then Newton's method on the penalised log-likelihood."""
    x = np.asarray(xs, dtype=np.float64)
    y = np.asarray(ys, dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return {"mean": mean, "scale": scale, "intercept": w[0], "coef": w[1:]}


def best_threshold(probabilities: Sequence[float], ys: Sequence[int]) -> tuple[float, float]:
    """The threshold with the best balanced accuracy (midpoints of the distinct values, ties
    to the one nearest 0.5), and that accuracy."""
    gold = ["supported" if y else "not_supported" for y in ys]
    values = sorted(set(probabilities))
    candidates = [(a + b) / 2 for a, b in itertools.pairwise(values)] or [0.5]
    best = max(
        (
            balanced_accuracy_of(
                confusion(
                    gold,
                    ["supported" if q >= t else "not_supported" for q in probabilities],
                    LABELS,
                )
            ),
            -abs(t - 0.5),
            t,
        )
        for t in candidates
    )
    return best[2], cast(float, best[0])  # None only where ys hold no label at all
