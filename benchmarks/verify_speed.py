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

    .venv/bin/python benchmarks/verify_speed.py      # or: make bench
"""

from __future__ import annotations

import gc
import html
import json
import os
import platform
import random
import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from quotebound import Source, WorkingSet, verify

SEED = 20260131
BASE_SOURCES = 20
SIZES = (20, 200, 2000)
TARGET_SOURCE_CHARS = 1500
ROUNDS = 7
MIN_ROUND_S = 0.12

# Targets from the issue.
MAX_PREPARED_US_PER_CITATION = 10.0
MIN_PREPARED_SPEEDUP = 5.0
MIN_AFRESH_SPEEDUP = 3.0
MAX_FLAT_RATIO = 2.0

# -- a realistic working set ---------------------------------------------------------------

_TEAMS = ("Payroll", "People Ops", "Facilities", "Security", "Finance", "Legal", "IT Service")
_REGIONS = ("Germany", "France", "Ireland", "Poland", "Spain", "the Netherlands", "Portugal")
_PROGRAMMES = ("Bridge", "Northstar", "Harbour", "Keystone", "Lighthouse", "Meridian")
_MONTHS = ("January", "February", "April", "June", "July", "September", "October", "November")
_BENEFITS = ("parental leave", "relocation support", "tuition refunds", "gym membership")
_SYSTEMS = ("Workday", "the expense portal", "ServiceNow", "the HR inbox", "Concur")

# Each template is one sentence; ``{…}`` slots are filled per source. The text is written
# as a packer would insert it: curly quotes, em dashes, a few no-break spaces (\u00a0) and
# an occasional HTML entity.
_TEMPLATES = (
    "Employees in {region} are entitled to {n1} weeks of paid {benefit} unless local law "
    "provides more.",
    "Requests submitted after {month} {day}, {year} are handled under the revised procedure "
    "(see job-{job}).",
    "The reimbursement cap is EUR\u00a0{amount} per night for hotels in Tier {tier} cities, "
    "including taxes &amp; service charges.",
    "Contractors are not eligible for company-paid {benefit}; their agency’s terms apply instead.",
    "The on-call rotation \u2014 managed by the {team} team \u2014 must acknowledge a page "
    "within {n2} minutes.",
    "Records are retained for {n3} years and deleted within {n4}\u00a0days of the retention date.",
    "Managers must approve a request within {n5} business days; escalations go to "
    "{team} &amp; Legal.",
    "As of {month} {day}, {year}, the \u201c{programme}\u201d programme replaces the older "
    "scheme for staff in {region}.",
    "Staff who don’t submit receipts within {n6} days lose the claim, and late claims "
    "above EUR\u00a0{amount} need a director’s sign-off.",
    "Ticket job-{job} tracks the migration of {system} to the new approval workflow, "
    "scheduled for Q{tier} {year}.",
    "A laptop may be replaced every {n7} months; exceptions are logged under ref inv-{year}-{job}.",
    "Part-time staff accrue leave pro rata: {pct}% of the full-time allowance of {n8} days "
    "per year.",
    "The {team} team reviews access rights every {n9} days and revokes unused accounts "
    "\u2014 no exceptions.",
    "Travel booked less than {n10} days ahead needs approval in {system} before the ticket "
    "is issued.",
    "Per the policy dated {iso}, overtime above {n11} hours a month is paid at 1.5 times "
    "the base rate.",
    "The \u201cquiet hours\u201d rule means no meetings between 12:00 and 13:30 in "
    "{region}, except for incidents.",
)


def _slots(rng: random.Random) -> dict[str, str]:
    year = rng.randint(2023, 2027)
    return {
        "region": rng.choice(_REGIONS),
        "benefit": rng.choice(_BENEFITS),
        "team": rng.choice(_TEAMS),
        "programme": rng.choice(_PROGRAMMES),
        "month": rng.choice(_MONTHS),
        "system": rng.choice(_SYSTEMS),
        "day": str(rng.randint(1, 28)),
        "year": str(year),
        "iso": f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "job": str(rng.randint(10, 999)),
        "tier": str(rng.randint(1, 4)),
        "amount": f"{rng.randint(1, 4)},{rng.randint(0, 999):03d}",
        "pct": str(rng.choice((40, 50, 60, 75, 80))),
        **{f"n{i}": str(rng.randint(2, 60)) for i in range(1, 12)},
    }


def make_source_text(rng: random.Random) -> str:
    """About ``TARGET_SOURCE_CHARS`` of policy prose in paragraphs of 2-4 sentences."""
    slots = _slots(rng)
    order = list(_TEMPLATES)
    rng.shuffle(order)
    paragraphs: list[str] = []
    size = 0
    while order and size < TARGET_SOURCE_CHARS:
        para: list[str] = []
        for _ in range(rng.randint(2, 4)):
            if not order:
                break
            sentence = order.pop().format(**slots)
            para.append(sentence)
            size += len(sentence) + 1
            if size >= TARGET_SOURCE_CHARS:
                break
        paragraphs.append(" ".join(para))
    return "\n\n".join(paragraphs)


def make_sources(count: int, seed: int = SEED) -> list[Source]:
    rng = random.Random(seed)
    return [
        Source(f"S{i}", make_source_text(rng), title=f"Policy page {i}", updated="2026-01-15")
        for i in range(1, count + 1)
    ]


# -- a model answer with verbatim (but differently typed) quotes -------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;])\s+", text) if len(s.split()) >= 10]


# What the quotes should make the normaliser deal with, one per good citation in turn.
_FEATURES = ("&amp;", "\u201c", "\u00a0", "\u2014", "\u2019")


def _window(rng: random.Random, text: str, need_number: bool, feature: str) -> list[str]:
    """A run of 8-18 whole words (tokens as written) from one sentence of ``text``.

    The sentence has ``feature`` in it where the source has one; most windows start where
    the sentence starts.
    """
    candidates = [s for s in _sentences(text) if not need_number or re.search(r"\d", s)]
    special = [s for s in candidates if feature in s]
    sentence = rng.choice(special or candidates)
    words = sentence.split(" ")  # a no-break space stays inside its token, as a model copies it
    size = rng.randint(8, min(18, len(words)))
    for attempt in range(50):
        start = 0 if attempt == 0 and rng.random() < 0.6 else rng.randint(0, len(words) - size)
        chunk = words[start : start + size]
        if not need_number or any(re.fullmatch(r"\d+[.,;)]?", w) for w in chunk):
            return chunk
    raise AssertionError("no window with a free-standing number")  # pragma: no cover


def _retype(rng: random.Random, words: list[str]) -> str:
    """What a model does to a verbatim quote: case, spacing, straight quotes, decoded entities."""
    quote = " ".join(words)
    style = rng.randrange(4)
    if style == 0:
        quote = quote.lower()
    elif style == 1:
        quote = quote[0].upper() + quote[1:]
    elif style == 2:
        quote = quote.replace(" ", "  ", 2).replace(" ", "\n", 1)
    quote = quote.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    if rng.random() < 0.5:
        quote = quote.replace("&amp;", "&")
    return quote


def _alter_number(words: list[str], corpus: Sequence[str]) -> list[str]:
    """The same words with one free-standing number changed (14 -> 16), so that the quote
    occurs in no source at all (the checks then take their full not-found path)."""
    for i, w in enumerate(words):
        m = re.fullmatch(r"(\d+)([.,;)]?)", w)
        if m is None:
            continue
        for step in range(2, 1000):
            out = [*words[:i], f"{int(m.group(1)) + step}{m.group(2)}", *words[i + 1 :]]
            needle = baseline_norm(" ".join(out))
            if not any(needle in body for body in corpus):
                return out
    raise AssertionError("no number to alter")  # pragma: no cover


def _claim_text(windows: list[list[str]]) -> str:
    """A claim restating the quoted words (same numbers and identifiers, no quotation marks)."""
    parts = []
    for words in windows:
        plain = html.unescape(" ".join(words)).replace("\u00a0", " ")
        plain = re.sub(r"[\"\u201c\u201d]", "", plain).strip(" .;,")
        parts.append(plain[0].lower() + plain[1:] if plain[1:2].islower() else plain)
    return f"The policy says: {'; '.join(parts)}."


@dataclass(frozen=True)
class Answer:
    raw: str
    citations: int
    kept: tuple[int, ...]  # 1-based numbers of the claims that must be kept
    dropped: tuple[int, ...]


# Which of the first 20 sources each claim cites; "!" marks a quote with an altered number.
_PLAN: tuple[tuple[str, ...], ...] = (
    ("S1",),
    ("S2", "S5"),
    ("S7",),
    ("S3", "S11"),
    ("S13",),
    ("S17",),
    ("S9!",),  # the only citation fails: claim dropped
    ("S19", "S4!"),  # one citation fails: claim kept on the other
)


def make_answer(sources: Sequence[Source], seed: int = SEED + 1) -> Answer:
    """The answer, citing the first ``BASE_SOURCES`` of ``sources`` (all of them are searched
    to make sure the altered quotes occur nowhere)."""
    rng = random.Random(seed)
    by_id = {s.id: s.text for s in sources[:BASE_SOURCES]}
    corpus = [baseline_norm(s.text) for s in sources]
    claims = []
    kept, dropped = [], []
    n_cits = 0
    for n, plan in enumerate(_PLAN, 1):
        citations = []
        good: list[list[str]] = []
        for ref in plan:
            sid = ref.rstrip("!")
            bad = ref.endswith("!")
            feature = _FEATURES[n_cits % len(_FEATURES)]
            words = _window(rng, by_id[sid], need_number=bad, feature=feature)
            if bad:
                words = _alter_number(words, corpus)
            else:
                good.append(words)
            citations.append({"source": sid, "quote": _retype(rng, words)})
            n_cits += 1
        claims.append({"text": _claim_text(good or [words]), "citations": citations})
        (kept if good else dropped).append(n)
    quotes = "".join(c["quote"] for claim in claims for c in claim["citations"])
    for needed in ("&", "\u00a0", "\u2014", '"', "'", "\n", "  "):  # normalisation must matter
        assert needed in quotes, f"no quote has {needed!r}; change SEED"
    raw = json.dumps({"answerable": True, "claims": claims, "missing": ""}, ensure_ascii=False)
    return Answer(raw, n_cits, tuple(kept), tuple(dropped))


# -- the naive baseline (seed 004's validate(), written out again) -----------------------------

_CURLY_SINGLE = re.compile("[\u2018\u2019]")
_CURLY_DOUBLE = re.compile("[\u201c\u201d]")
_WS = re.compile(r"\s+")


def baseline_norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", html.unescape(text)).lower()
    text = _CURLY_DOUBLE.sub('"', _CURLY_SINGLE.sub("'", text))
    return _WS.sub(" ", text).strip()


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


def median_seconds(fn: Callable[[], object]) -> float:
    """Median seconds per call over ``ROUNDS`` rounds of at least ``MIN_ROUND_S`` each."""
    fn()  # warm caches and imports
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start >= MIN_ROUND_S:
            break
        calls *= 2
    times = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - start) / calls)
            gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(times)


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


def unseen(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run as if its answer had never been seen: ``re``'s cache of compiled patterns is
    cleared first (for every case, the baseline too), so that nothing compiled from one call's
    quotes is reused by the next, as it could not be with real answers. (A pattern compiled per
    failing quote once cost ~0.4 ms that this benchmark, repeating one answer, did not show.)"""

    def run() -> object:
        re.purge()
        return fn()

    return run


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
        f"answer: {len(_PLAN)} claims, {cits} citations (2 fail: altered number), "
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
