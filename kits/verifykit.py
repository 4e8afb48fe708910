"""The verify tests' shared working set and helpers: ``check`` runs ``verify`` and asserts the
invariants every verdict keeps (known statuses and reason codes, a span only where the quote was
found, spans whose text is the quote)."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any

from quotebound import (
    CITATION_REASONS,
    CLAIM_REASONS,
    STATUSES,
    Policy,
    Source,
    Verdict,
    WorkingSet,
    normalize,
    verify,
)
from quotebound.text.markup import markup_free
from quotebound.text.quoteparts import split_quote

# The same trimming verify.py applies before its second lookup (edge quotes and punctuation).
_TRIM = re.compile(r"""^[\s"'.,;:!?]+|[\s"'.,;:!?]+$""")

S1 = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
S2 = (
    "In Germany, the company tops up statutory parental allowance to full salary for the "
    "first 14 weeks."
)
S3 = "Contractors are not eligible for company-paid parental leave."
S4 = '{"job": "job-17", "state": "failed", "exit_code": 137, "started": "03:00"}'
S5 = "Refunds for cancelled orders are issued within 5-7 business days and cost 1,000 dollars."

WS = WorkingSet(
    [
        Source("S1", S1, title="Global leave policy", updated="2025-04-01"),
        Source("S2", S2, title="Germany addendum", updated="2026-02-15"),
        Source("S3", S3),
        Source("S4", S4, kind="tool"),
        Source("S5", S5),
    ]
)


def cit(source: Any, quote: Any) -> dict[str, Any]:
    return {"source": source, "quote": quote}


def claim(text: str, *citations: dict[str, Any]) -> dict[str, Any]:
    return {"text": text, "citations": list(citations)}


def answer(*claims: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"answerable": True, "claims": list(claims), **extra})


def one(text: str, source: Any, quote: Any) -> str:
    """A JSON answer with one claim and one quoted citation."""
    return answer(claim(text, cit(source, quote)))


_SUPPORT_REASONS = {
    "identifier_not_in_source",
    "number_not_in_source",
    "quoted_text_not_in_source",
    "name_not_in_source",
    "quote_word_changed",
}


def assert_spans(ws: WorkingSet, verdict: Verdict) -> None:
    """Every accepted quote has a span whose normalised text is the (trimmed) quote."""
    for c in verdict.claims:
        for citation in c.citations:
            if citation.span is None:
                assert not (citation.valid and citation.quote), citation
                continue
            assert citation.quote
            source = ws.get(citation.source or "")
            assert source is not None
            start, end = citation.span
            assert 0 <= start < end <= len(source.text)
            full = normalize(citation.quote)
            if normalize(source.text[start:end]) in {full, _TRIM.sub("", full)}:
                assert citation.spans is None
                continue
            # read in parts (an elision, a bracket) or with the source's markup left out: the
            # parts lie in order inside the cover span, and each is exactly its part of the
            # quote (its first and last pieces at its edges, the pieces in order inside)
            parts = citation.parts
            assert parts[0][0] == start and parts[-1][1] == end
            assert all(a < b <= c for (a, b), (c, _) in pairwise(parts))
            assert citation.spans is None or len(citation.spans) > 1
            texts = [_shown(source.text[a:b]) for a, b in parts]
            read = split_quote(_TRIM.sub("", full))
            if read is None:
                assert texts in ([full], [_TRIM.sub("", full)]), (texts, full)
                continue
            assert len(texts) == len(read.parts), (texts, read)
            for text, pieces in zip(texts, read.parts, strict=True):
                assert text.startswith(pieces[0]) and text.endswith(pieces[-1]), (text, pieces)
                at = 0
                for piece in pieces:
                    at = text.index(piece, at) + len(piece)


def _shown(text: str) -> str:
    """A source slice as a reader sees it: normalised, its inline markup left out."""
    free = markup_free(text)
    return normalize(free[0] if free else text)


def check(
    output: str,
    ws: WorkingSet = WS,
    fmt: str = "auto",
    policy: Policy | None = None,
) -> Verdict:
    verdict = verify(ws, output, format=fmt, policy=policy)
    assert verdict.status in STATUSES
    for c in verdict.claims:
        assert c.reason is None or c.reason in CLAIM_REASONS
        for citation in c.citations:
            assert citation.reason is None or citation.reason in CITATION_REASONS
            assert citation.valid is (citation.reason is None)
            if citation.span is not None:
                # A span means the quote was found: only a later support check may fail it.
                assert citation.valid or citation.reason in _SUPPORT_REASONS
    assert_spans(ws, verdict)
    return verdict


def reasons(verdict: Verdict) -> list[list[str | None]]:
    """Per claim, the reasons of its citations."""
    return [[c.reason for c in cl.citations] for cl in verdict.claims]


def only_citation(verdict: Verdict) -> Any:
    assert len(verdict.claims) == 1
    assert len(verdict.claims[0].citations) == 1
    return verdict.claims[0].citations[0]
