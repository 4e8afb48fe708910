"""Views of a stored trace, shared by the CLI (``quotebound trace``) and the HTTP service.

Invariants:
- Everything shown comes from the trace (what was sent and what was verified then), never from
  the live corpus, so a citation reopens the same way weeks later.
- The verdict shown is the one the answer served (``counts.served_attempt``, with the claims
  kept from the first attempt when ``counts.kept_from_first_attempt`` says so), else the last.
- A source id that was not in the trace's working set is a NotFoundError, never a made-up card.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .cards import deep_link
from .errors import NotFoundError
from .store import TraceAttempt, TraceRecord, TraceSource
from .verdict import Verdict, with_kept_from


def served_attempt(trace: TraceRecord) -> TraceAttempt | None:
    """The attempt whose verdict the answer showed (``counts.served_attempt``), if recorded."""
    served = trace.counts.get("served_attempt")
    if served is not None and 0 < served <= len(trace.attempts):
        return trace.attempts[served - 1]
    return None


def served_output(trace: TraceRecord) -> str | None:
    """The raw output the answer was served from, else the last one (None: no model call)."""
    attempt = served_attempt(trace) or (trace.attempts[-1] if trace.attempts else None)
    return None if attempt is None else attempt.output


def served_verdict(trace: TraceRecord) -> Verdict | None:
    """The verdict that the answer showed, else the last one recorded (``Verdict.from_dict``
    of what the trace stores)."""
    attempt = served_attempt(trace)
    if attempt is None or attempt.verdict is None:
        attempt = next((a for a in reversed(trace.attempts) if a.verdict), None)
    if attempt is None or attempt.verdict is None:
        return None
    verdict = Verdict.from_dict(attempt.verdict, f"trace {trace.id}: verdict")
    first = trace.attempts[0].verdict
    if trace.counts.get("kept_from_first_attempt") and first is not None:
        verdict = with_kept_from(Verdict.from_dict(first, f"trace {trace.id}: verdict"), verdict)
    return verdict


def spans_for(trace: TraceRecord, sid: str) -> list[list[int]]:
    """The verified ``[start, end)`` spans of ``sid`` in the served verdict, sorted."""
    verdict = served_verdict(trace)
    if verdict is None:
        return []
    spans = {
        part
        for claim in verdict.kept_claims
        for c in claim.citations
        if c.source == sid and c.valid
        for part in c.parts
    }
    return [list(s) for s in sorted(spans)]


def sent_source(trace: TraceRecord, sid: str) -> TraceSource:
    """The source ``sid`` exactly as it was sent in ``trace``."""
    source = trace.source(sid)
    if source is None:
        sent = ", ".join(s.id for s in trace.sources) or "nothing"
        raise NotFoundError(f"{sid} was not sent in trace {trace.id} (sent: {sent})")
    return source


def source_view(trace: TraceRecord, sid: str) -> dict[str, Any]:
    """One sent source with its verified spans and a link to the original at the right place."""
    source = sent_source(trace, sid)
    spans = spans_for(trace, sid)
    quote = source.text[spans[0][0] : spans[0][1]] if spans else ""
    return {
        "trace": trace.id,
        "source": dataclasses.asdict(source),
        "spans": spans,
        "link": deep_link(source.to_source(), quote),
    }


def claims_view(trace: TraceRecord) -> list[dict[str, Any]]:
    """The served verdict's claims, kept and dropped, each with its citations' outcomes."""
    verdict = served_verdict(trace)
    if verdict is None:
        return []
    return [
        {
            "text": claim.text,
            "kept": claim.kept,
            "reason": claim.reason,
            "citations": [
                {
                    "source": c.source,
                    "valid": c.valid,
                    "reason": c.reason,
                    "span": None if c.span is None else list(c.span),
                    "spans": None if c.spans is None else [list(x) for x in c.spans],
                    "quote": c.quote,
                    "anchored": c.anchored,
                }
                for c in claim.citations
            ],
        }
        for claim in verdict.claims
    ]


def trace_dict(trace: TraceRecord) -> dict[str, Any]:
    """The whole trace as JSON, plus the served verdict's claims."""
    data = dataclasses.asdict(trace)
    data["claims"] = claims_view(trace)
    return data
