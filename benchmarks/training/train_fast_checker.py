"""Fit the fast checker's logistic model on AttributionBench dev, and write its weights.

The features are ``quotebound.entailment.learned.FEATURES``, computed by the shipped
``FastChecker.features_many`` on the pairs ``quotebound eval`` reads from
``dev_all_subset_balanced.jsonl`` (1,198 rows; the test file is never read). The model is an
L2-regularised logistic regression on standardised features, fitted by Newton's method to
convergence (a unique optimum: the same data gives the same weights), then rounded to 6
decimals. The threshold is the one with the best dev balanced accuracy among midpoints of the
fitted probabilities (ties: nearest 0.5). ``tests/entailment/test_fast_checker.py`` runs ``fit``
again and compares it with the shipped file; ``quotebound.entailment.learned.REFIT`` names the
command that writes it.

    .venv/bin/python -m benchmarks.training.train_fast_checker          # print the fit
    .venv/bin/python -m benchmarks.training.train_fast_checker --write  # and write the weights
    .venv/bin/python -m benchmarks.training.train_fast_checker --floor  # every tier's floor

``--floor`` scores the bare content-word share (the share of the claim's content words found
in the evidence, ``content_share`` alone) with its threshold fitted on dev, on AttributionBench
test and WiCE dev: the floor the issue measures every tier against.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import PACKAGE, SHARED_DATA
from benchmarks.common.fitting import L2, best_threshold, logistic
from quotebound.entailment.learned import FEATURES, REFIT, FastChecker, Weights
from quotebound.evaluation import load_dataset
from quotebound.evaluation.loaders import Kind, PairExample
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion

DEV = SHARED_DATA / "attributionbench" / "dev_all_subset_balanced.jsonl"
TEST = "test_all_subset_balanced_sampled500.jsonl"  # read by --floor only, never to fit
OUT = PACKAGE / "entailment" / "fast_checker.json"
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

    def r6(v: Any) -> float:
        return round(float(v), 6)

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
            "script": REFIT,
        },
    )


def _blank() -> Weights:
    """Placeholder weights for computing features only (never used to decide)."""
    n = len(FEATURES)
    return Weights(FEATURES, (0.0,) * n, (1.0,) * n, (0.0,) * n, 0.0, 0.5, {})


def floor() -> None:
    """The bare content-word share, its threshold fitted on dev, on test and WiCE dev."""
    from quotebound.entailment.learned import lexical

    def shares(path: Path, kind: Kind) -> tuple[list[float], list[int]]:
        pairs = load_dataset([path], kind).pairs
        xs = [lexical(p.claim, p.quote).values["content_share"] for p in pairs]
        return xs, [1 if p.gold == "supported" else 0 for p in pairs]

    data = SHARED_DATA
    xs, ys = shares(DEV, "attributionbench")
    threshold, bacc = best_threshold(xs, ys)
    print(f"content-word share >= {threshold:.4f}: dev {bacc:.3f} (n={len(xs)})")
    sets: tuple[tuple[str, Path, Kind], ...] = (
        ("AttributionBench test", data / "attributionbench" / TEST, "attributionbench"),
        ("WiCE dev", data / "wice" / "claim_dev.jsonl", "wice"),
    )
    for name, path, kind in sets:
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
