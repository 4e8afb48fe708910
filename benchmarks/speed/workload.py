"""The verify benchmarks' workload, and how it is timed: shared by ``verify_speed`` (which
times it), ``verify_against`` (this build against another) and ``server_load`` (the same
request over HTTP).

- ``make_sources``: a deterministic (seeded) working set of policy-like sources of about 1.5 KB
  each (numbers, dates, identifiers such as ``job-17``, curly quotes, em dashes, no-break
  spaces, HTML entities, paragraph breaks);
- ``make_answer``: one model answer in the JSON claims format citing the first
  ``BASE_SOURCES`` of them (8 claims, 11 citations, verbatim quotes of 4-40 words with case,
  whitespace and quote-style changes; two citations carry an altered number);
- ``median_seconds`` and ``unseen``: the median of ``ROUNDS`` rounds of at least
  ``MIN_ROUND_S`` each, ``re``'s cache of compiled patterns cleared before every call.
"""

from __future__ import annotations

import gc
import html
import json
import random
import re
import statistics
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from quotebound import Source

SEED = 20260131
BASE_SOURCES = 20
TARGET_SOURCE_CHARS = 1500
ROUNDS = 7
MIN_ROUND_S = 0.12


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
PLAN: tuple[tuple[str, ...], ...] = (
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
    claims: list[dict[str, Any]] = []
    kept: list[int] = []
    dropped: list[int] = []
    n_cits = 0
    for n, plan in enumerate(PLAN, 1):
        citations: list[dict[str, str]] = []
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


# -- the naive baseline's normalisation (make_answer checks no altered quote occurs) ------

_CURLY_SINGLE = re.compile("[\u2018\u2019]")
_CURLY_DOUBLE = re.compile("[\u201c\u201d]")
_WS = re.compile(r"\s+")


def baseline_norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", html.unescape(text)).lower()
    text = _CURLY_DOUBLE.sub('"', _CURLY_SINGLE.sub("'", text))
    return _WS.sub(" ", text).strip()


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


def unseen(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run as if its answer had never been seen: ``re``'s cache of compiled patterns is
    cleared first (for every case, the baseline too), so that nothing compiled from one call's
    quotes is reused by the next, as it could not be with real answers. (A pattern compiled per
    failing quote once cost ~0.4 ms that this benchmark, repeating one answer, did not show.)"""

    def run() -> object:
        re.purge()
        return fn()

    return run
