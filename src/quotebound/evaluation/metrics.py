"""The evaluation metrics: pure functions of labels, judgements and verdicts.

Every metric here is defined, with its formula, in ``docs/evaluation.md``. Invariants:

- No function reads a file, a model or a clock: each is a function of its arguments (the
  bootstrap takes its seed), so a test can compute every number by hand.
- A metric over nothing is ``None``, never 0: an ``Estimate`` with ``n == 0`` has no value.
- Proportions carry a 95% Wilson score interval; balanced accuracy and F1, which are not
  proportions of one count, carry a percentile bootstrap interval (stratified by gold label)
  with a fixed seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal
BOOTSTRAP_RESAMPLES = 1000


@dataclass(frozen=True, slots=True)
class Estimate:
    """A metric's value over ``n`` items with its 95% interval ``[low, high]``."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    hits: int | None = None  # the numerator, for proportions

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        out: dict[str, Any] = {
            "value": r(self.value),
            "low": r(self.low),
            "high": r(self.high),
            "n": self.n,
        }
        if self.hits is not None:
            out["hits"] = self.hits
        return out


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``hits / n`` (``n > 0``)."""
    if n <= 0 or not 0 <= hits <= n:
        raise ValueError(f"wilson needs 0 <= hits <= n and n > 0, got {hits}/{n}")
    p = hits / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def proportion(hits: int, n: int) -> Estimate:
    """``hits / n`` with its Wilson interval; no value when ``n == 0``."""
    if n == 0:
        return Estimate(None, None, None, 0, 0)
    low, high = wilson(hits, n)
    return Estimate(hits / n, low, high, n, hits)


# --- classification: confusion, per-label precision/recall/F1, balanced accuracy -----------


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> list[list[int]]:
    """``matrix[i][j]``: items of gold label ``labels[i]`` predicted as ``labels[j]``."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, pred, strict=True):
        if g not in index or p not in index:
            raise ValueError(f"label {g if g not in index else p!r} is not one of {list(labels)}")
        matrix[index[g]][index[p]] += 1
    return matrix


def _f1(tp: int, fp: int, fn: int) -> float | None:
    """F1 = 2TP / (2TP + FP + FN); None when the label never occurs in gold or predictions."""
    denom = 2 * tp + fp + fn
    return None if denom == 0 else 2 * tp / denom


def _ratios(matrix: list[list[int]]) -> tuple[list[float | None], list[float | None]]:
    """Per-label recall and F1 from a confusion matrix."""
    recalls: list[float | None] = []
    f1s: list[float | None] = []
    for i, row in enumerate(matrix):
        tp, support = row[i], sum(row)
        predicted = sum(r[i] for r in matrix)
        recalls.append(tp / support if support else None)
        f1s.append(_f1(tp, predicted - tp, support - tp))
    return recalls, f1s


def balanced_accuracy_of(matrix: list[list[int]]) -> float | None:
    """The mean of the per-label recalls over labels that occur in gold."""
    recalls = [r for r in _ratios(matrix)[0] if r is not None]
    return sum(recalls) / len(recalls) if recalls else None


@dataclass(frozen=True, slots=True)
class LabelScores:
    label: str
    support: int  # items with this gold label
    predicted: int  # items predicted as this label
    precision: Estimate  # TP / predicted, Wilson interval
    recall: Estimate  # TP / support, Wilson interval
    f1: Estimate  # bootstrap interval

    def to_dict(self) -> dict[str, Any]:
        return {
            "support": self.support,
            "predicted": self.predicted,
            "precision": self.precision.to_dict(),
            "recall": self.recall.to_dict(),
            "f1": self.f1.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Classification:
    labels: tuple[str, ...]
    matrix: list[list[int]]
    accuracy: Estimate
    balanced_accuracy: Estimate
    per_label: tuple[LabelScores, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "confusion": self.matrix,
            "accuracy": self.accuracy.to_dict(),
            "balanced_accuracy": self.balanced_accuracy.to_dict(),
            "per_label": {s.label: s.to_dict() for s in self.per_label},
        }


def bootstrap(
    gold: Sequence[str],
    pred: Sequence[str],
    statistic: Callable[[list[list[int]]], Sequence[float | None]],
    labels: Sequence[str],
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> list[tuple[float | None, float | None]]:
    """Percentile 95% intervals of each value of ``statistic(confusion matrix)``.

    Stratified by gold label: each of ``resamples`` resamples draws, with replacement, as many
    items of each gold label as the data has (``random.Random(seed)``), so every resample has
    the same class balance and balanced accuracy keeps its meaning. A resample where a value
    is undefined (None) is left out for that value.
    """
    if not gold:
        return []
    index = {label: i for i, label in enumerate(labels)}
    strata: dict[int, list[int]] = {}
    for gold_label, pred_label in zip(gold, pred, strict=True):
        strata.setdefault(index[gold_label], []).append(index[pred_label])
    groups = sorted(strata.items())
    rng = random.Random(seed)
    width = len(statistic(confusion(gold, pred, labels)))
    draws: list[list[float]] = [[] for _ in range(width)]
    k = len(labels)
    for _ in range(resamples):
        matrix = [[0] * k for _ in range(k)]
        for g, preds in groups:
            row = matrix[g]
            for p in rng.choices(preds, k=len(preds)):
                row[p] += 1
        for slot, value in enumerate(statistic(matrix)):
            if value is not None:
                draws[slot].append(value)
    return [_percentiles(d) for d in draws]


def _percentiles(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    ordered = sorted(values)
    return _quantile(ordered, 0.025), _quantile(ordered, 0.975)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def classification(
    gold: Sequence[str], pred: Sequence[str], labels: Sequence[str], seed: int = 0
) -> Classification:
    """Accuracy, balanced accuracy and per-label precision/recall/F1, with 95% intervals."""
    matrix = confusion(gold, pred, labels)
    n = len(gold)
    correct = sum(matrix[i][i] for i in range(len(labels)))

    def stats(m: list[list[int]]) -> list[float | None]:
        return [balanced_accuracy_of(m), *_ratios(m)[1]]

    point = stats(matrix)
    intervals = bootstrap(gold, pred, stats, labels, seed) or [(None, None)] * len(point)
    ba_low, ba_high = intervals[0]
    scores = []
    for i, label in enumerate(labels):
        tp, support = matrix[i][i], sum(matrix[i])
        predicted = sum(row[i] for row in matrix)
        f1_low, f1_high = intervals[i + 1]
        f1 = point[i + 1]
        scores.append(
            LabelScores(
                label,
                support,
                predicted,
                proportion(tp, predicted),
                proportion(tp, support),
                Estimate(
                    f1, f1_low if f1 is not None else None, f1_high if f1 is not None else None, n
                ),
            )
        )
    return Classification(
        tuple(labels),
        matrix,
        proportion(correct, n),
        Estimate(
            point[0],
            ba_low if point[0] is not None else None,
            ba_high if point[0] is not None else None,
            n,
        ),
        tuple(scores),
    )


# --- citations: validity, ALCE-style recall and precision ---------------------------------


def citation_validity(valid: int, citations: int) -> Estimate:
    """Share of citations that passed the id and span checks: the cited id was sent and the
    quote is verbatim in the cited source (support and entailment checks do not count)."""
    return proportion(valid, citations)


Entails = Callable[[str, str], bool]  # (claim, evidence text) -> does the evidence support it


@dataclass(frozen=True, slots=True)
class CitedClaim:
    """A claim with the evidence text of each of its citations, in order; ``None`` for a
    citation with no checkable text (it failed the id or span check)."""

    text: str
    evidence: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class ClaimCitationScore:
    supported: bool  # the union of its citations' evidence supports the claim
    citations: int
    precise: int  # citations that are not irrelevant, counted only when ``supported``
    irrelevant: tuple[int, ...]  # 0-based positions of irrelevant citations


def join_evidence(texts: Sequence[str | None]) -> str | None:
    """The union of evidence texts, in order, one per paragraph; None when there is none."""
    present = [t for t in texts if t]
    return "\n\n".join(present) if present else None


def score_claim(claim: CitedClaim, entails: Entails) -> ClaimCitationScore:
    """ALCE's per-claim citation recall and precision (Gao et al., 2023, section 2.2).

    Recall: the claim is supported when the union of all its citations' evidence entails it.
    Precision: when it is supported, citation ``c`` is irrelevant if ``c`` alone does not
    entail the claim AND the union of the other citations still does; every other citation
    is precise. When the claim is not supported, none of its citations counts as precise.
    """
    k = len(claim.evidence)
    union = join_evidence(claim.evidence)
    supported = union is not None and entails(claim.text, union)
    if not supported:
        return ClaimCitationScore(False, k, 0, ())
    irrelevant: list[int] = []
    for i, own in enumerate(claim.evidence):
        if own is not None and (k == 1 or entails(claim.text, own)):
            continue  # a lone citation that supports the claim is needed by definition
        rest = join_evidence(claim.evidence[:i] + claim.evidence[i + 1 :])
        if rest is not None and entails(claim.text, rest):
            irrelevant.append(i)
    return ClaimCitationScore(True, k, k - len(irrelevant), tuple(irrelevant))


@dataclass(frozen=True, slots=True)
class CitationQuality:
    recall: Estimate  # supported claims / claims
    precision: Estimate  # precise citations / citations

    def to_dict(self) -> dict[str, Any]:
        return {"recall": self.recall.to_dict(), "precision": self.precision.to_dict()}


def citation_quality(scores: Sequence[ClaimCitationScore]) -> CitationQuality:
    """ALCE citation recall over claims and precision over citations, with Wilson intervals.

    A claim with no citation counts in recall's denominator (it is not supported).
    """
    return CitationQuality(
        proportion(sum(s.supported for s in scores), len(scores)),
        proportion(sum(s.precise for s in scores), sum(s.citations for s in scores)),
    )


# --- abstention --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Abstention:
    false_abstention: Estimate  # abstained, though answerable / answerable
    missed_abstention: Estimate  # answered, though unanswerable / unanswerable

    def to_dict(self) -> dict[str, Any]:
        return {
            "false_abstention_rate": self.false_abstention.to_dict(),
            "missed_abstention_rate": self.missed_abstention.to_dict(),
        }


def abstention(items: Sequence[tuple[bool, bool]]) -> Abstention:
    """From ``(answerable, abstained)`` pairs: the false and the missed abstention rates."""
    answerable = [abstained for ok, abstained in items if ok]
    unanswerable = [abstained for ok, abstained in items if not ok]
    return Abstention(
        proportion(sum(answerable), len(answerable)),
        proportion(sum(not a for a in unanswerable), len(unanswerable)),
    )
