"""The cascade: the fast checker decides where it is confident, the judge sees only the rest.

For each pair the fast checker's probability ``p`` (``learned.FastChecker``) is computed
first. Outside the band ``[low, high)``, which holds the fast checker's own threshold, the fast
checker's judgement stands; so does its ``contradicted`` (a contradiction rule's veto),
wherever ``p`` is. Inside the band the pair goes to the judge (``judge.JudgeBackend``) and the
judge's judgement stands, its detail prefixed with the fast checker's ``p``. The band
is read from the package's ``calibration.json`` (``cascade``), chosen on AttributionBench dev
by ``benchmarks/training/cascade_curve.py`` from the accuracy/speed curve; a wider band sends
more pairs to the judge (slower, and on dev more accurate).

Fail closed on both levels: a pair the fast checker cannot read goes to the judge; a judge
failure is the judgement (``error`` set, not supported).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from .base import Backend, Judgement
from .judge import JudgeBackend, calibration_entry
from .learned import FastChecker


def shipped_band() -> tuple[float, float]:
    """The band ``(low, high)`` in the package's ``calibration.json``."""
    entry = calibration_entry("cascade")
    return float(entry["low"]), float(entry["high"])


class CascadeBackend(Backend):
    name: ClassVar[str] = "cascade"

    def __init__(
        self, fast: FastChecker, judge: JudgeBackend, band: tuple[float, float] | None = None
    ) -> None:
        self.fast = fast
        self.judge_backend = judge
        self.low, self.high = band if band is not None else shipped_band()
        self.version = f"cascade-1[{self.low:g},{self.high:g})+{fast.version}+{judge.version}"
        self.judged = 0  # pairs sent to the judge so far (for reports)
        self._count = threading.Lock()

    def judge(self, claim: str, quote: str) -> Judgement:
        return self.judge_many([(claim, quote)])[0]

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        fast = self.fast.judge_many(pairs)
        out: list[Judgement] = []
        for (claim, quote), first in zip(pairs, fast, strict=True):
            p = first.p_supported
            vetoed = first.label == "contradicted" and first.error is None
            if vetoed or (p is not None and (p >= self.high or p < self.low)):
                out.append(replace(first, backend=self.name, version=self.version))
                continue
            with self._count:
                self.judged += 1
            second = self.judge_backend.judge(claim, quote)
            why = "fast checker could not read it" if p is None else f"fast p {p:.3f} unsure"
            detail = f"{why}; judge: {second.detail}" if second.detail else why
            out.append(replace(second, backend=self.name, version=self.version, detail=detail))
        return out

    def close(self) -> None:
        self.fast.close()
        self.judge_backend.close()
