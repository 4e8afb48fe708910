"""Which gate turned an answer away (``benchmarks.quality.answer_quality.gate``, which the
abstention benchmarks tally per set): read from the answer ``ask`` returns."""

from __future__ import annotations

from typing import Any

from benchmarks.quality.answer_quality import gate
from quotebound.entailment.base import Judgement
from quotebound.pipeline import Abstention, Answer
from quotebound.verdict import Citation, Claim, Verdict


def _claim(*reasons: str | None) -> Claim:
    cites = tuple(Citation("S1", "S1", "q", r is None, r) for r in reasons)
    kept = any(r is None for r in reasons)
    return Claim("Leave is 16 weeks.", cites, kept, None if kept else "no_valid_citation")


def _abstained(*verdicts: Verdict, missing: str = "x", **more: Any) -> Answer:
    return Answer(
        "q?", "abstained", abstention=Abstention("q?", (), missing, ""), verdicts=verdicts, **more
    )


def test_each_gate_is_named() -> None:
    nothing = _abstained(missing="no document you may read matched the question")
    assert gate(nothing) == "retrieval"
    assert gate(_abstained(Verdict("abstained", "json"))) == "model"
    assert gate(_abstained(Verdict("unparseable", "json", error="bad"))) == "provider"
    code = Verdict("ungrounded", "json", (_claim("quote_not_found"),))
    assert gate(_abstained(code)) == "code checks"
    support = Verdict("ungrounded", "json", (_claim("not_entailed", "contradicted"),))
    assert gate(_abstained(support)) == "support tier"
    mixed = Verdict("ungrounded", "json", (_claim("not_entailed"), _claim("quote_not_found")))
    assert gate(_abstained(support, mixed)) == "code checks"  # any code failure decides
    refused = Judgement("not_supported", 0.2, "judge", "v")
    kept = Verdict("grounded", "json", (_claim(None),))
    assert gate(_abstained(kept, answer_check=refused)) == "answer check"
    fell_back = _abstained(code, counts={"fallback_asked": 1})
    assert gate(fell_back) == "code checks + fallback"
    assert gate(Answer("q?", "grounded")) is None
