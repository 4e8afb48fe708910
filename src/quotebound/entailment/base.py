"""The entailment tier's one interface: does this quote support this claim?

Invariants:
- Three labels, a closed set: ``supported`` (the quote entails the claim), ``contradicted`` (the
  quote says otherwise), ``unrelated`` (the quote neither entails nor contradicts it).
- Every judgement names the backend and its version (model included), so a verdict says exactly
  which checker ran.
- Fail closed: a backend that errs, or whose model answers something unreadable, returns a
  judgement with ``error`` set and label ``unrelated``; it never passes a claim it could not
  check, and never raises out of ``judge`` for a bad model answer.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..errors import QuoteboundError

Label = Literal["supported", "contradicted", "unrelated"]
LABELS: tuple[Label, ...] = ("supported", "contradicted", "unrelated")


class EntailmentError(QuoteboundError):
    """A backend that cannot be set up (missing package, model path, bad label map)."""

    code = "entailment_setup"


@dataclass(frozen=True, slots=True)
class Judgement:
    label: Label
    score: float  # the backend's confidence in ``label``, 0..1
    backend: str  # "fast" | "heuristic" | "judge" | "cascade" | "nli"
    version: str  # the backend's version, with its model: "heuristic-1+all-MiniLM-L6-v2"
    detail: str | None = None  # why, for a person: "negation dropped: 'not'"
    error: str | None = None  # set when the check failed (the label is then "unrelated")

    @property
    def supported(self) -> bool:
        return self.label == "supported" and self.error is None

    @property
    def p_supported(self) -> float | None:
        """The backend's probability that the evidence supports (or, for the answer check,
        answers): ``score`` for a ``supported`` label, else ``1 - score``; None when the check
        failed (its score is then no probability)."""
        if self.error is not None:
            return None
        return self.score if self.label == "supported" else 1.0 - self.score

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "score": round(self.score, 4),
            "backend": self.backend,
            "version": self.version,
            "detail": self.detail,
            "error": self.error,
        }


class Backend(ABC):
    """An entailment checker. Subclasses set ``name`` and ``version`` and implement ``judge``."""

    name: ClassVar[str]
    version: str = "0"

    @abstractmethod
    def judge(self, claim: str, quote: str) -> Judgement:
        """Whether ``quote`` supports ``claim``; never raises for a bad model answer."""

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        """Judge several (claim, quote) pairs; backends that batch override this."""
        return [self.judge(claim, quote) for claim, quote in pairs]

    def failed(self, message: str) -> Judgement:
        """The fail-closed judgement for a check that could not be made."""
        return Judgement("unrelated", 0.0, self.name, self.version, error=message)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the backend holds (a model)."""


def reads_documents(check: Callable[..., Any]) -> bool:
    """Whether the answer check ``check`` takes a ``documents`` keyword: the titles of the
    documents its evidence is quoted from (``BothAnswerCheck.answers``, ``JudgeBackend.answers``);
    a two-argument check is sent the question and the evidence alone."""
    try:
        return "documents" in inspect.signature(check).parameters
    except (TypeError, ValueError):  # a callable without a signature Python can read
        return False
