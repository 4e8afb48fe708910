"""Fit the fast checker's logistic model on AttributionBench dev, and write its weights.

The features are ``quotebound.entailment.learned.FEATURES``, computed by the shipped
``FastChecker.features_many`` on the pairs ``quotebound eval`` reads from
``dev_all_subset_balanced.jsonl`` (1,198 rows; the test file is never read). The model is an
L2-regularised logistic regression on standardised features, fitted by Newton's method to
convergence (a unique optimum: the same data gives the same weights), then rounded to 6
decimals. The threshold is the one with the best dev balanced accuracy among midpoints of the
fitted probabilities (ties: nearest 0.5). ``tests/test_fast_checker.py`` runs ``fit`` again and
compares it with the shipped file.

    .venv/bin/python benchmarks/train_fast_checker.py            # print the fit
    .venv/bin/python benchmarks/train_fast_checker.py --write    # and write fast_checker.json
    .venv/bin/python benchmarks/train_fast_checker.py --floor    # the floor every tier must beat

``--floor`` scores the bare content-word share (the share of the claim's content words found
in the evidence, ``content_share`` alone) with its threshold fitted on dev, on AttributionBench
test and WiCE dev: the floor the issue measures every tier against.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from quotebound.entailment.learned import FEATURES, FastChecker, Weights
from quotebound.evaluation import load_dataset
from quotebound.evaluation.loaders import PairExample
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "data" / "attributionbench" / "dev_all_subset_balanced.jsonl"
TEST = "test_all_subset_balanced_sampled500.jsonl"  # read by --floor only, never to fit
OUT = ROOT / "src" / "quotebound" / "entailment" / "fast_checker.json"
L2 = 1.0  # the penalty on the standardised coefficients (not on the intercept)
VERSION = "1"
LABELS = ("supported", "not_supported")


def dev_pairs() -> list[PairExample]:
    return list(load_dataset([DEV], "attributionbench").pairs)


def feature_rows(
    checker: FastChecker, pairs: Sequence[PairExample]
) -> tuple[list[list[float]], list[int]]:
    """The feature vectors and 0/1 gold labels of the pairs the checker can read."""
    vectors = checker.features_many([(p.claim, p.quote) for p in pairs])
    xs, ys = [], []
    for pair, x in zip(pairs, vectors, strict=True):
        if x is not None:
            xs.append(x)
            ys.append(1 if pair.gold == "supported" else 0)
    return xs, ys


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
    return best[2], best[0]


def fit(checker: FastChecker | None = None) -> Weights:
    """The weights this script ships, fitted afresh on AttributionBench dev."""
    own = checker is None
    checker = checker or FastChecker(weights=_blank())
    try:
        xs, ys = feature_rows(checker, dev_pairs())
    finally:
        if own:
            checker.close()
    model = logistic(xs, ys)
    r6 = lambda v: round(float(v), 6)  # noqa: E731
    weights = Weights(
        features=FEATURES,
        mean=tuple(r6(v) for v in model["mean"]),
        scale=tuple(r6(v) for v in model["scale"]),
        coef=tuple(r6(v) for v in model["coef"]),
        intercept=r6(model["intercept"]),
        threshold=0.5,
        meta={},
    )
    probabilities = [weights.probability(x) for x in xs]
    threshold, bacc = best_threshold(probabilities, ys)
    return Weights(
        features=weights.features,
        mean=weights.mean,
        scale=weights.scale,
        coef=weights.coef,
        intercept=weights.intercept,
        threshold=round(threshold, 4),
        meta={
            "version": VERSION,
            "fitted_on": f"AttributionBench dev_all_subset_balanced.jsonl, {len(xs)} pairs",
            "l2": L2,
            "dev_balanced_accuracy": round(bacc, 4),
            "script": "benchmarks/train_fast_checker.py",
        },
    )


def _blank() -> Weights:
    """Placeholder weights for computing features only (never used to decide)."""
    n = len(FEATURES)
    return Weights(FEATURES, (0.0,) * n, (1.0,) * n, (0.0,) * n, 0.0, 0.5, {})


def floor() -> None:
    """The bare content-word share, its threshold fitted on dev, on test and WiCE dev."""
    from quotebound.entailment.learned import lexical

    def shares(path: Path, kind: str) -> tuple[list[float], list[int]]:
        pairs = load_dataset([path], kind).pairs
        xs = [lexical(p.claim, p.quote).values["content_share"] for p in pairs]
        return xs, [1 if p.gold == "supported" else 0 for p in pairs]

    data = ROOT.parent / "shared" / "data"
    xs, ys = shares(DEV, "attributionbench")
    threshold, bacc = best_threshold(xs, ys)
    print(f"content-word share >= {threshold:.4f}: dev {bacc:.3f} (n={len(xs)})")
    for name, path, kind in (
        ("AttributionBench test", data / "attributionbench" / TEST, "attributionbench"),
        ("WiCE dev", data / "wice" / "claim_dev.jsonl", "wice"),
    ):
        xs, ys = shares(path, kind)
        gold = ["supported" if y else "not_supported" for y in ys]
        pred = ["supported" if x >= threshold else "not_supported" for x in xs]
        print(f"  {name}: {balanced_accuracy_of(confusion(gold, pred, LABELS)):.3f} (n={len(xs)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write fast_checker.json")
    parser.add_argument("--floor", action="store_true", help="score the content-word floor")
    args = parser.parse_args()
    if args.floor:
        floor()
        return
    weights = fit()
    for name, coef in zip(weights.features, weights.coef, strict=True):
        print(f"{name:>16} {coef:+.4f}")
    bacc = weights.meta["dev_balanced_accuracy"]
    print(f"threshold {weights.threshold}  dev balanced accuracy {bacc}")
    if args.write:
        OUT.write_text(json.dumps(weights.to_dict(), indent=2) + "\n", "utf-8")
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
