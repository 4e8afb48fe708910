"""How fast ``quotebound.verify`` checks a model answer, against a naive baseline.

What it measures, side by side in one run, on a deterministic (seeded) working set of 20
policy-like sources of about 1.5 KB each (numbers, dates, identifiers such as ``job-17``,
curly quotes, em dashes, no-break spaces, HTML entities, paragraph breaks) and one model
answer in the JSON claims format (8 claims, 11 citations of 1-2 sources each, verbatim
quotes of 4-40 words with case, whitespace and quote-style changes; two citations carry an
altered number, so the failure path is timed too):

1. quotebound with the working set built and prepared once (``WorkingSet(...).prepare()``),
   then ``verify(ws, raw, "json")`` per answer: µs per citation and answers/s;
2. quotebound with the working set built afresh for every answer: answers/s;
3. a naive baseline following seed 004's ``validate()``: parse the JSON, re-normalise every
   source on every call (``html.unescape``, NFKC, lower case, curly quotes to straight,
   whitespace collapsed) and test each quote by substring: answers/s and µs per citation;
4. flatness: the same answer against working sets of 20, 200 and 2000 sources (it cites 11
   of the first 20; the rest are never cited), for all three.

Every timed call first clears ``re``'s cache of compiled patterns (``unseen``), so that a
pattern compiled from one answer's quotes cannot be reused by the next, as with real answers.

Before timing, the verdicts of quotebound and of the baseline are checked (asserted) against
the expected kept and dropped claims, so a broken path cannot be timed by mistake. Every
figure is the median of several rounds timed with ``time.perf_counter``; each round repeats
the call until it lasts at least ``MIN_ROUND_S``. The targets and PASS/FAIL are printed after
the tables; the exit status is 0 either way (this is a report, not a test).

Run it from the repository root (it takes well under a minute on two cores)::

    .venv/bin/python -m benchmarks.speed.verify_speed      # or: make bench
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.speed.workload import (
    BASE_SOURCES,
    MIN_ROUND_S,
    PLAN,
    ROUNDS,
    SEED,
    Answer,
    baseline_norm,
    make_answer,
    make_sources,
    median_seconds,
    unseen,
)
from quotebound import Source, WorkingSet, verify

SIZES = (20, 200, 2000)

# Targets from the issue.
MAX_PREPARED_US_PER_CITATION = 10.0
MIN_PREPARED_SPEEDUP = 5.0
MIN_AFRESH_SPEEDUP = 3.0
MAX_FLAT_RATIO = 2.0

# -- the naive baseline (seed 004's validate(), written out again) -----------------------------


def baseline_validate(
    raw: str, sources: Sequence[Source], min_words: int = 4
) -> tuple[list[dict[str, object]], list[tuple[str, str | None, str]]]:
    """Re-normalise every source, then substring-test each quote in its cited source."""
    bodies = {src.id: baseline_norm(src.text) for src in sources}
    kept: list[dict[str, object]] = []
    dropped: list[tuple[str, str | None, str]] = []
    for claim in json.loads(raw).get("claims", []):
        good = []
        for cit in claim.get("citations", []):
            body = bodies.get(cit.get("source"))
            quote = baseline_norm(cit.get("quote", ""))
            if body is None:
                why = "unknown source id"
            elif len(quote.split()) < min_words:
                why = "quote too short to verify"
            elif quote not in body:
                why = "quote not found verbatim"
            else:
                good.append(cit)
                continue
            dropped.append((claim["text"], cit.get("source"), why))
        if good:
            kept.append({**claim, "citations": good})
        else:
            dropped.append((claim["text"], None, "no valid citation"))
    return kept, dropped


# -- sanity checks ---------------------------------------------------------------------------


def check_verdicts(sources: Sequence[Source], answer: Answer) -> None:
    """Both checkers must give the expected verdict before anything is timed."""
    for ws in (WorkingSet(sources), WorkingSet(sources).prepare()):
        verdict = verify(ws, answer.raw, "json")
        kept = tuple(n for n, c in enumerate(verdict.claims, 1) if c.kept)
        dropped = tuple(n for n, c in enumerate(verdict.claims, 1) if not c.kept)
        assert verdict.status == "partial", verdict.failures
        assert (kept, dropped) == (answer.kept, answer.dropped), verdict.failures
        reasons = [c.reason for claim in verdict.claims for c in claim.citations if not c.valid]
        assert reasons == ["quote_not_found"] * 2, reasons
        assert all(c.span is not None for cl in verdict.claims for c in cl.citations if c.valid)
    kept_b, dropped_b = baseline_validate(answer.raw, sources)
    assert len(kept_b) == len(answer.kept), dropped_b
    assert [d[2] for d in dropped_b].count("no valid citation") == len(answer.dropped)


# -- timing ----------------------------------------------------------------------------------


def with_citations_repeated(raw: str, times: int) -> str:
    """The same answer with every claim's citations listed ``times`` times over."""
    data = json.loads(raw)
    for claim in data["claims"]:
        claim["citations"] = claim["citations"] * times
    return json.dumps(data, ensure_ascii=False)


def without_failures(raw: str, sources: Sequence[Source]) -> str:
    """The answer with the citations that fail dropped (every claim keeps one)."""
    verdict = verify(WorkingSet(sources), raw, "json")
    data = json.loads(raw)
    for claim, checked in zip(data["claims"], verdict.claims, strict=True):
        claim["citations"] = [
            c for c, v in zip(claim["citations"], checked.citations, strict=True) if v.valid
        ] or claim["citations"]
    data["claims"] = [c for c, v in zip(data["claims"], verdict.claims, strict=True) if v.kept]
    return json.dumps(data, ensure_ascii=False)


def marginal_us_per_citation(ws: WorkingSet, raw: str, citations: int) -> float:
    """The cost of one more citation: (time with every citation x3 - time x1) / (2 x count)."""
    once = median_seconds(unseen(lambda: verify(ws, raw, "json")))
    thrice_raw = with_citations_repeated(raw, 3)
    thrice = median_seconds(unseen(lambda: verify(ws, thrice_raw, "json")))
    return (thrice - once) * 1e6 / (2 * citations)


@dataclass(frozen=True)
class Timings:
    prepared: float
    afresh: float
    baseline: float
    afresh_valid: float  # afresh, on the answer without its two failing citations


def time_size(sources: Sequence[Source], raw: str, valid_raw: str) -> Timings:
    prepared_ws = WorkingSet(sources).prepare()
    return Timings(
        prepared=median_seconds(unseen(lambda: verify(prepared_ws, raw, "json"))),
        afresh=median_seconds(unseen(lambda: verify(WorkingSet(sources), raw, "json"))),
        baseline=median_seconds(unseen(lambda: baseline_validate(raw, sources))),
        afresh_valid=median_seconds(unseen(lambda: verify(WorkingSet(sources), valid_raw, "json"))),
    )


# -- report ----------------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> int:
    started = time.perf_counter()
    all_sources = make_sources(BASE_SOURCES)
    fillers = make_sources(max(SIZES) - BASE_SOURCES, seed=SEED + 2)
    all_sources += [
        Source(f"S{BASE_SOURCES + i}", s.text, title=s.title, updated=s.updated)
        for i, s in enumerate(fillers, 1)
    ]
    base = all_sources[:BASE_SOURCES]
    answer = make_answer(all_sources)
    for size in SIZES:
        check_verdicts(all_sources[:size], answer)

    valid_raw = without_failures(answer.raw, base)
    results = {size: time_size(all_sources[:size], answer.raw, valid_raw) for size in SIZES}
    marginal = marginal_us_per_citation(WorkingSet(base).prepare(), answer.raw, answer.citations)
    small, big = results[min(SIZES)], results[max(SIZES)]
    cits = answer.citations

    kb = sum(len(s.text.encode()) for s in base) / 1024
    print("quotebound verify speed")
    print(
        f"working set: {len(base)} sources, {kb:.1f} KB ({kb * 1024 / len(base):.0f} B each); "
        f"answer: {len(PLAN)} claims, {cits} citations (2 fail: altered number), "
        f"{len(answer.kept)} kept / {len(answer.dropped)} dropped (checked before timing)"
    )
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"median of {ROUNDS} rounds, each >= {MIN_ROUND_S * 1000:.0f} ms"
    )
    print()
    header = f"{'case (20 sources)':<44}{'answers/s':>12}{'µs/answer':>12}{'µs/citation':>13}"
    print(header)
    print("-" * len(header))
    rows = (
        ("quotebound, prepared once", small.prepared),
        ("quotebound, WorkingSet built per answer", small.afresh),
        ("baseline (seed 004 validate, re-normalise)", small.baseline),
    )
    for label, sec in rows:
        print(f"{label:<44}{1 / sec:>12,.0f}{sec * 1e6:>12,.1f}{sec * 1e6 / cits:>13,.2f}")
    print()
    cited = len({c["source"] for cl in json.loads(answer.raw)["claims"] for c in cl["citations"]})
    header = (
        f"{f'flatness: sources in set ({cited} cited)':<38}"
        f"{'qb afresh/s':>13}{'qb prepared/s':>15}{'baseline/s':>12}{'afresh, valid/s':>17}"
    )
    print(header)
    print("-" * len(header))
    for size in SIZES:
        t = results[size]
        print(
            f"{size:<38}{1 / t.afresh:>13,.0f}{1 / t.prepared:>15,.0f}{1 / t.baseline:>12,.1f}"
            f"{1 / t.afresh_valid:>17,.0f}"
        )
    print("(afresh, valid: the same answer without its two failing citations)")
    print(
        f"marginal cost of one more citation, prepared: {marginal:.2f} µs "
        "(every citation listed 3 times vs once)"
    )
    print()

    prepared_us = small.prepared * 1e6 / cits
    targets = (
        (
            "prepared: µs per citation (answer / 11)",
            f"<= {MAX_PREPARED_US_PER_CITATION:g} µs",
            f"{prepared_us:.2f} µs",
            prepared_us <= MAX_PREPARED_US_PER_CITATION,
        ),
        (
            "prepared: marginal µs per citation",
            f"<= {MAX_PREPARED_US_PER_CITATION:g} µs",
            f"{marginal:.2f} µs",
            marginal <= MAX_PREPARED_US_PER_CITATION,
        ),
        (
            "prepared answers/s vs baseline",
            f">= {MIN_PREPARED_SPEEDUP:g}x",
            f"{small.baseline / small.prepared:.1f}x",
            small.baseline / small.prepared >= MIN_PREPARED_SPEEDUP,
        ),
        (
            "afresh answers/s vs baseline",
            f">= {MIN_AFRESH_SPEEDUP:g}x",
            f"{small.baseline / small.afresh:.1f}x",
            small.baseline / small.afresh >= MIN_AFRESH_SPEEDUP,
        ),
        (
            f"afresh time, {max(SIZES)} vs {min(SIZES)} sources",
            f"<= {MAX_FLAT_RATIO:g}x",
            f"{big.afresh / small.afresh:.1f}x",
            big.afresh / small.afresh <= MAX_FLAT_RATIO,
        ),
        (
            f"afresh (valid answer), {max(SIZES)} vs {min(SIZES)}",
            f"<= {MAX_FLAT_RATIO:g}x",
            f"{big.afresh_valid / small.afresh_valid:.1f}x",
            big.afresh_valid / small.afresh_valid <= MAX_FLAT_RATIO,
        ),
        (
            f"prepared time, {max(SIZES)} vs {min(SIZES)} sources",
            f"<= {MAX_FLAT_RATIO:g}x",
            f"{big.prepared / small.prepared:.1f}x",
            big.prepared / small.prepared <= MAX_FLAT_RATIO,
        ),
    )
    header = f"{'target':<42}{'wanted':>10}{'measured':>12}  result"
    print(header)
    print("-" * len(header))
    for name, wanted, got, ok in targets:
        print(f"{name:<42}{wanted:>10}{got:>12}  {_verdict(ok)}")
    print(
        f"(baseline, {max(SIZES)} vs {min(SIZES)} sources: "
        f"{big.baseline / small.baseline:.0f}x slower, for reference)"
    )
    print()
    passed = sum(ok for *_, ok in targets)
    elapsed = time.perf_counter() - started
    print(f"{passed}/{len(targets)} targets passed; total run time {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
