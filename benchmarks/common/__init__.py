"""What several benchmarks share: where things are, and the statistics and answer readings
they print. The sets more than one benchmark reads are ``benchmarks.common.clapnq`` and
``benchmarks.common.contoso``; the logistic fit both training scripts use is
``benchmarks.common.fitting``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: a benchmark that needs none of them stays light
    from quotebound.corpus import Hit
    from quotebound.pipeline import Answer

ROOT = Path(__file__).resolve().parents[2]  # the repository root
SHARED_DATA = ROOT.parent / "shared" / "data"  # the public sets, read in place
PACKAGE = ROOT / "src" / "quotebound"  # what the training scripts write into
CALIBRATION = PACKAGE / "entailment" / "calibration.json"
RESULTS = ROOT / "benchmarks" / "results"  # caches of model calls (not in git)
LABELS = ("supported", "not_supported")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson interval of k successes in n."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pct(k: int, n: int) -> str:
    """``k`` of ``n`` as a percentage with its 95% Wilson interval, "-" when ``n`` is 0."""
    if not n:
        return "-"
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)] if ordered else 0.0


def p50_p95(ms: list[float]) -> str:
    """``"p50 | p95"`` of ``ms``, one decimal: a row's two cells of a latency table."""
    return f"{statistics.median(ms):.1f} | {p95(ms):.1f}" if ms else "- | -"


def bootstrap(gold: Sequence[str], pred: Sequence[str]) -> tuple[float, float]:
    """The 95% interval of balanced accuracy, as ``quotebound eval`` computes it (stratified
    bootstrap, seed 0)."""
    from quotebound.evaluation.metrics import classification

    estimate = classification(gold, pred, LABELS).balanced_accuracy
    return estimate.low or 0.0, estimate.high or 0.0


def read_cache(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL cache, none when it does not exist yet."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def served_claims(answer: Answer) -> list[Any]:
    """The verified claims the answer served, in its order (the served verdict's kept claims,
    with those kept from the first attempt after a repair)."""
    from quotebound.verdict import with_kept_from

    if not answer.claims:
        return []
    first, last = answer.verdicts[0], answer.verdicts[answer.counts["served_attempt"] - 1]
    served = with_kept_from(first, last) if answer.counts.get("kept_from_first_attempt") else last
    return list(served.kept_claims)


def rank_of(hits: list[Hit], gold: set[str]) -> int | None:
    """The 1-based rank of the first hit from a gold document, None when none is found."""
    for n, hit in enumerate(hits, 1):
        if hit.key in gold:  # a hit's key is its document's
            return n
    return None
