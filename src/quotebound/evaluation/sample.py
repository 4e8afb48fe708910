"""A stratified, seeded sample of recent traces for the weekly entailment review, as JSONL.

Strata: the trace's status (grounded, partial, abstained, ...) crossed with whether its served
verdict dropped anything (``citations``: ``all_kept`` when every citation was valid and every
claim kept, ``some_dropped`` otherwise, ``none`` when it has no citation). Allocation is
proportional to stratum size, with at least one trace from every stratum that has one (so a
rare stratum, such as partial answers, is always seen), by largest remainders; within a
stratum the traces are drawn by ``random.Random(seed)``. The same store, pool and seed give
the same sample. Provider-error traces (no claim served because a model call failed; see
``run.provider_error_of``) are left out of the pool, and counted: a failed call has no model
output to review.

Each exported line is a line of the evaluation JSONL format (docs/evaluation.md): question,
sources as sent, the served output and its format, and empty ``labels`` for the reviewer to
fill, plus the served ``verdict`` and a ``trace`` object (id, time, status, stratum, model).
A reviewed file is a dataset for ``quotebound eval``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..store import Store, TraceRecord
from ..store.base import SEARCH_ONLY
from ..traceview import served_output, served_verdict
from .run import provider_error_of


def stratum(trace: TraceRecord) -> tuple[str, str]:
    """(status, citations) of a trace's served verdict."""
    verdict = served_verdict(trace)
    claims = verdict.claims if verdict is not None else ()
    cits = [c for claim in claims for c in claim.citations]
    if not cits:
        state = "none"
    elif all(c.valid for c in cits) and all(claim.kept for claim in claims):
        state = "all_kept"
    else:
        state = "some_dropped"
    return trace.status or (verdict.status if verdict is not None else "unknown"), state


def allocate(sizes: dict[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    """How many to draw from each stratum: proportional, at least one each where possible,
    largest remainders (ties to the larger stratum, then by name); never more than it has."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    keys = sorted(k for k in sizes if sizes[k] > 0)
    take = {k: 0 for k in sizes}
    floor_one = keys if n >= len(keys) else sorted(keys, key=lambda k: (-sizes[k], k))[:n]
    for k in floor_one:
        take[k] = 1
    left = n - len(floor_one)
    if left:
        rest = {k: sizes[k] - take[k] for k in keys}
        pool = sum(rest.values())
        quotas = {k: left * rest[k] / pool for k in keys}
        for k in keys:
            take[k] += min(rest[k], int(quotas[k]))
        order = sorted(keys, key=lambda k: (-(quotas[k] - int(quotas[k])), -sizes[k], k))
        short = n - sum(take.values())
        while short > 0:
            moved = False
            for k in order:
                if short and take[k] < sizes[k]:
                    take[k] += 1
                    short -= 1
                    moved = True
            if not moved:
                break
    return take


def sample_traces(
    traces: Sequence[TraceRecord], n: int, seed: int
) -> list[tuple[TraceRecord, tuple[str, str]]]:
    """A stratified sample of ``n`` of ``traces`` with each one's stratum, ordered by stratum
    and then newest first."""
    if n < 1:
        raise InputError(f"--sample needs a positive number of traces, got {n}")
    strata: dict[tuple[str, str], list[TraceRecord]] = {}
    for trace in traces:
        strata.setdefault(stratum(trace), []).append(trace)
    take = allocate({k: len(v) for k, v in strata.items()}, n)
    rng = random.Random(seed)
    out: list[tuple[TraceRecord, tuple[str, str]]] = []
    for key in sorted(strata):
        members = sorted(strata[key], key=lambda t: t.id)  # a fixed order before drawing
        drawn = rng.sample(members, take[key])
        drawn.sort(key=lambda t: (t.created_at, t.id), reverse=True)
        out += ((t, key) for t in drawn)
    return out


def recent_traces(store: Store, owner: str | None, limit: int) -> list[TraceRecord]:
    """The ``limit`` newest answers' traces of ``owner`` (None: traces written without an
    owner); a trace of a search alone is no answer and is left out."""
    traces = store.get_traces([s.id for s in store.list_traces(owner, limit=limit)])
    return [t for t in traces if t.status != SEARCH_ONLY]


def review_line(trace: TraceRecord, key: tuple[str, str]) -> dict[str, Any]:
    """One line of the review file: an evaluation example with labels left to fill."""
    verdict = served_verdict(trace)
    output = served_output(trace) or ""
    claims = verdict.claims if verdict is not None else ()
    return {
        "id": trace.id,
        "question": trace.question,
        "sources": [s.to_source().to_dict() for s in trace.sources],
        "output": output,
        "format": verdict.format if verdict is not None else "auto",
        "labels": {
            "answerable": None,
            "claims": [
                {"support": None, "citations": [{"needed": None} for _ in c.citations]}
                for c in claims
            ],
        },
        "verdict": verdict.to_dict() if verdict is not None else None,
        "trace": {
            "id": trace.id,
            "created_at": trace.created_at,
            "status": trace.status,
            "model": trace.model,
            "stratum": {"status": key[0], "citations": key[1]},
        },
    }


def export_sample(
    store: Store, path: Path, n: int, seed: int, owner: str | None = None, pool: int = 500
) -> dict[str, Any]:
    """Write the sample to ``path`` (JSONL); a summary of what was drawn from which stratum."""
    recent = recent_traces(store, owner, pool)
    traces = [t for t in recent if provider_error_of(t) is None]
    if not traces:
        also = f" ({len(recent)} provider-error traces left out)" if recent else ""
        raise InputError(
            f"no traces to sample in this store (for this --owner){also}; "
            "answer some questions with quotebound ask first"
        )
    drawn = sample_traces(traces, n, seed)
    lines = [json.dumps(review_line(t, k), ensure_ascii=False) for t, k in drawn]
    try:
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the sample to {path}: {exc.strerror}") from None
    counts: dict[str, dict[str, int]] = {}
    for trace in traces:
        status, cits = stratum(trace)
        counts.setdefault(f"{status}/{cits}", {"pool": 0, "drawn": 0})["pool"] += 1
    for _, (status, cits) in drawn:
        counts[f"{status}/{cits}"]["drawn"] += 1
    return {
        "out": str(path),
        "pool": len(traces),
        "drawn": len(drawn),
        "seed": seed,
        "provider_errors_left_out": len(recent) - len(traces),
        "strata": dict(sorted(counts.items())),
    }
